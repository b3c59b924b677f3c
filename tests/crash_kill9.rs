//! Concurrent writers push over HTTP and keep a ledger of every acknowledged
//! push while the node is killed with SIGKILL at random moments and restarted
//! on the same directory. After every restart: each acknowledged message is
//! read back at its acknowledged offset, offsets are gapless, nothing is
//! duplicated, and a push that was never answered exists wholly or not at all.

mod common;

use common::crash::{kill_rounds, push_until_killed, Ledger, Rounds};
use common::{push_body, Node};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const QUEUES: usize = 3;
const PARTITIONS: usize = 3;
const WRITERS: usize = 12;

/// Where a message was acknowledged: (queue, partition, offset), by transactionId.
type At = (String, String, u64);

fn rounds() -> usize {
    std::env::var("QUEEN_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_under_concurrent_pushes_loses_no_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let seed = std::env::var("QUEEN_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let node = Node::start(&dir, &[]).await;
    let n = rounds();
    let rounds = Rounds { kills: n, writers: WRITERS, pause_ms: 30..400, seed };
    let writer =
        |node: &Node, ledger, round, w| tokio::spawn(write_until_killed(node.url("/api/v1/push"), ledger, round, w));
    let (_node, ledger) = kill_rounds(node, rounds, writer, verify).await;
    let acked = ledger.acked.len();
    assert!(acked > 100 * n / 2, "the writers got too few acknowledgements to mean anything: {acked}");
    eprintln!("{n} kills, {acked} acknowledged messages, all intact");
}

async fn write_until_killed(url: String, ledger: Arc<Mutex<Ledger<At>>>, round: usize, writer: usize) {
    let client = reqwest::Client::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64((round * 1000 + writer) as u64);
    for seq in 0.. {
        let size = rng.gen_range(1..=4);
        let items: Vec<(String, String, String, Value)> = (0..size)
            .map(|i| {
                let t = format!("r{round}-w{writer}-s{seq}-i{i}");
                let q = format!("crash-q{}", rng.gen_range(0..QUEUES));
                let p = format!("p{}", rng.gen_range(0..PARTITIONS));
                (q, p, t.clone(), json!({ "t": t, "pad": "x".repeat(rng.gen_range(0..700)) }))
            })
            .collect();
        let txids: Vec<String> = items.iter().map(|i| i.2.clone()).collect();
        let answer = push_until_killed(&client, &url, &items).await;
        let mut l = ledger.lock().unwrap();
        match answer {
            Some(results) => {
                for (item, r) in items.iter().zip(results) {
                    assert_eq!(r["status"], "queued");
                    l.acked.insert(item.2.clone(), (item.0.clone(), item.1.clone(), r["offset"].as_u64().unwrap()));
                }
            }
            None => {
                l.unanswered.push(txids);
                return;
            }
        }
    }
}

async fn verify(node: &Node, ledger: &Ledger<At>) {
    // Where every stored transactionId sits, checking gaps and duplicates.
    let mut found: HashMap<String, At> = HashMap::new();
    for q in 0..QUEUES {
        for p in 0..PARTITIONS {
            let (queue, partition) = (format!("crash-q{q}"), format!("p{p}"));
            let read = node.read_all(&queue, &partition).await;
            for (i, (offset, txid, payload)) in read.records.iter().enumerate() {
                assert_eq!(*offset, i as u64, "offsets of {queue}/{partition} have a gap");
                assert_eq!(payload["t"], json!(txid), "payload does not match its transactionId");
                let previous = found.insert(txid.clone(), (queue.clone(), partition.clone(), *offset));
                assert!(previous.is_none(), "{txid} is stored twice");
            }
            assert_eq!(
                read.records.len() as u64,
                read.high_watermark,
                "{queue}/{partition} reads short of its high watermark"
            );
        }
    }
    ledger.check(&found);
    // Dedup holds across the restart: a retry of an acknowledged push
    // answers the original offset and stores nothing.
    for (txid, (queue, partition, offset)) in ledger.acked.iter().take(20) {
        let items = vec![(queue.clone(), partition.clone(), txid.clone(), json!({ "t": txid }))];
        let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(
            (body[0]["status"].as_str(), body[0]["offset"].as_u64()),
            (Some("duplicate"), Some(*offset)),
            "{txid}"
        );
    }
}
