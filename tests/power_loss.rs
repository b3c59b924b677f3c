//! Power loss, simulated the way lazyfs does it: the node records each file's
//! fsynced length (the test-only `QUEEN_TEST_SYNC_LEDGER` hook); after a
//! SIGKILL the test drops every byte that was never synced (files truncated to
//! their last synced length, never-synced files and the unsynced `.qidx`
//! indexes deleted), and the node must boot with every acknowledged write;
//! also while retention expires a queue and reclaim frees its files.

mod common;

use common::{push_body, Node};
use queen::seams::qlog::sync_ledger;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Acked = Arc<Mutex<HashMap<String, (String, u64)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_unsynced_bytes_keeps_every_acknowledged_write() {
    // Small segments so rolls, sealed files and their indexes are part of it.
    power_cut_rounds(&[("QUEEN_RAFT_SEGMENT_BYTES", "65536")], None).await;
}

/// The same while retention expires one of the queues and reclaim unlinks
/// and rewrites files: every acknowledged write at or above its queue's log
/// start survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_unsynced_bytes_while_reclaim_frees_files_keeps_every_acknowledged_write() {
    let env = [
        ("QUEEN_RAFT_SEGMENT_BYTES", "8192"),
        ("QUEEN_RAFT_DURABLE_EVERY_MS", "100"),
        ("QUEEN_RAFT_TXN_WINDOW_MIN_S", "0"),
        // Few open files, so readers open files again by path while reclaim
        // rewrites them (a rename outside the store's lock failed fetches).
        ("QUEEN_QLOG_OPEN_FILES", "4"),
    ];
    power_cut_rounds(&env, Some("power-q0")).await;
}

/// Six rounds of writers killed by a simulated power cut, each followed by
/// a boot that must hold every acknowledged write; `expiring` names a queue
/// configured with a retention of 2 s.
async fn power_cut_rounds(env: &[(&str, &str)], expiring: Option<&str>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let ledger_path = tmp.path().join("sync-ledger");
    let ledger_arg = ledger_path.to_str().unwrap().to_string();
    let mut env = env.to_vec();
    env.push(("QUEEN_TEST_SYNC_LEDGER", ledger_arg.as_str()));
    let acked: Acked = Arc::default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut node = Node::start(&dir, &env).await;
    if let Some(queue) = expiring {
        let (status, body) =
            node.post("/api/v1/configure", &json!({"queue": queue, "options": {"retentionSeconds": 2}})).await;
        assert_eq!(status, 200, "{body}");
    }
    for round in 0..6 {
        let writers: Vec<_> =
            (0..8).map(|w| tokio::spawn(write(node.url("/api/v1/push"), acked.clone(), round, w))).collect();
        let pause = if expiring.is_some() { 1000..3000 } else { 100..500 };
        tokio::time::sleep(Duration::from_millis(rng.gen_range(pause))).await;
        node.kill9();
        for w in writers {
            w.await.unwrap();
        }
        let dropped = drop_unsynced(&dir, &ledger_path);
        node = Node::start(&dir, &env).await;
        let acked = acked.lock().unwrap().clone();
        for q in 0..4 {
            let queue = format!("power-q{q}");
            // Retention may move the log start during the read: read again from the new one.
            let read = loop {
                let start = node.read_from(&queue, "Default", 0).await.log_start;
                let read = node.read_from(&queue, "Default", start).await;
                if read.error.is_none() {
                    break read;
                }
            };
            if expiring != Some(queue.as_str()) {
                assert_eq!(read.log_start, 0, "{queue} has no retention");
            }
            let stored: HashMap<String, u64> = read.records.iter().map(|(o, t, _)| (t.clone(), *o)).collect();
            for (i, (offset, _, _)) in read.records.iter().enumerate() {
                assert_eq!(*offset, read.log_start + i as u64, "offsets of {queue} have a gap");
            }
            for (txid, (q, offset)) in acked.iter().filter(|(_, (q, o))| *q == queue && *o >= read.log_start) {
                assert_eq!(stored.get(txid), Some(offset), "acknowledged {txid} of {q} lost after the power cut");
            }
        }
        eprintln!("round {round}: dropped {dropped} unsynced bytes, {} acknowledged messages intact", acked.len());
    }
    if expiring.is_some() {
        // Configured first, the expiring queue logs to q1.
        assert!(!dir.join("qlog/q1/r00000001.qlog").exists(), "reclaim freed the expiring queue's first file");
    }
}

async fn write(url: String, acked: Acked, round: usize, writer: usize) {
    let client = reqwest::Client::new();
    for seq in 0.. {
        let t = format!("r{round}-w{writer}-{seq}");
        let queue = format!("power-q{}", seq % 4);
        let items = vec![(queue.clone(), "Default".to_string(), t.clone(), json!({"t": t, "pad": "y".repeat(300)}))];
        match client.post(&url).json(&push_body(&items)).send().await {
            Ok(r) if r.status().as_u16() == 201 => {
                let r: Vec<Value> = r.json().await.unwrap();
                acked.lock().unwrap().insert(t, (queue, r[0]["offset"].as_u64().unwrap()));
            }
            _ => return,
        }
    }
}

/// Truncates every qlog file to its last synced length and deletes what was
/// never synced. Answers the bytes dropped. The store's `data.mdb` is left
/// whole: LMDB syncs a transaction's pages before the meta page that commits
/// them, so its unsynced tail is never referenced, and its own fsyncs cannot
/// be observed from outside, so a ledger line written after the commit would
/// race a kill and cut pages a committed meta page names (the node then dies
/// of SIGBUS reading them, a failure of the harness, not of the node).
fn drop_unsynced(dir: &Path, ledger: &Path) -> u64 {
    let synced = sync_ledger::read(ledger).unwrap();
    let mut dropped = 0;
    let mut files = vec![];
    for log in std::fs::read_dir(dir.join("qlog")).unwrap() {
        let log = log.unwrap().path();
        if log.is_dir() {
            files.extend(std::fs::read_dir(&log).unwrap().map(|f| f.unwrap().path()));
        }
    }
    for f in files {
        let len = std::fs::metadata(&f).unwrap().len();
        match synced.get(&f) {
            Some(&keep) if f.extension().is_some_and(|e| e != "qidx") => {
                if len > keep {
                    std::fs::OpenOptions::new().write(true).open(&f).unwrap().set_len(keep).unwrap();
                    dropped += len - keep;
                }
            }
            _ => {
                std::fs::remove_file(&f).unwrap();
                dropped += len;
            }
        }
    }
    dropped
}
