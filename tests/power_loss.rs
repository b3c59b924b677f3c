//! Power loss, simulated the way lazyfs does it: the node records each file's
//! fsynced length (the test-only `QUEEN_TEST_SYNC_LEDGER` hook); after a
//! SIGKILL the test drops every byte that was never synced (files truncated to
//! their last synced length, never-synced files and the unsynced `.qidx`
//! indexes deleted), and the node must boot with every acknowledged write.

mod common;

use common::{push_body, Node};
use queen::qlog::sync_ledger;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Acked = Arc<Mutex<HashMap<String, (String, u64)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_unsynced_bytes_keeps_every_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let ledger_path = tmp.path().join("sync-ledger");
    let ledger_arg = ledger_path.to_str().unwrap().to_string();
    // Small segments so rolls, sealed files and their indexes are part of it.
    let env = [("QUEEN_TEST_SYNC_LEDGER", ledger_arg.as_str()), ("QUEEN_RAFT_SEGMENT_BYTES", "65536")];
    let acked: Acked = Arc::default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut node = Node::start(&dir, &env).await;
    for round in 0..6 {
        let writers: Vec<_> =
            (0..8).map(|w| tokio::spawn(write(node.url("/api/v1/push"), acked.clone(), round, w))).collect();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(100..500))).await;
        node.kill9();
        for w in writers {
            w.await.unwrap();
        }
        let dropped = drop_unsynced(&dir, &ledger_path);
        node = Node::start(&dir, &env).await;
        let acked = acked.lock().unwrap().clone();
        for q in 0..4 {
            let queue = format!("power-q{q}");
            let read = node.read_all(&queue, "Default").await;
            let stored: HashMap<String, u64> = read.records.iter().map(|(o, t, _)| (t.clone(), *o)).collect();
            for (i, (offset, _, _)) in read.records.iter().enumerate() {
                assert_eq!(*offset, i as u64, "offsets of {queue} have a gap");
            }
            for (txid, (q, offset)) in acked.iter().filter(|(_, (q, _))| *q == queue) {
                assert_eq!(stored.get(txid), Some(offset), "acknowledged {txid} of {q} lost after the power cut");
            }
        }
        eprintln!("round {round}: dropped {dropped} unsynced bytes, {} acknowledged messages intact", acked.len());
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

/// Truncates every qlog file and the store to its last synced length and
/// deletes what was never synced. Answers the bytes dropped.
fn drop_unsynced(dir: &Path, ledger: &Path) -> u64 {
    let synced = sync_ledger::read(ledger).unwrap();
    let mut dropped = 0;
    let mut files = vec![dir.join("store").join("data.mdb")];
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
            _ if f.ends_with("data.mdb") => {}
            _ => {
                std::fs::remove_file(&f).unwrap();
                dropped += len;
            }
        }
    }
    dropped
}
