//! The queue guarantees under concurrency, on a real node: 32 competing
//! consumers over 64 partitions drain 50,000 messages with random failed
//! acks and abandoned leases (left to expire), and the node is killed with
//! SIGKILL halfway. None is lost, none is acknowledged twice, none is
//! delivered again after a successful ack, and each partition is delivered
//! in order without skips.

mod common;

use common::Node;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PARTITIONS: u64 = 64;
const CONSUMERS: usize = 32;
const QUEUE: &str = "guarantees";

fn messages() -> u64 {
    std::env::var("QUEEN_GUARANTEE_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000)
}

#[derive(Default)]
struct Ledger {
    /// transactionId → (partition, offset) of every successful ack.
    acked: HashMap<String, (String, u64)>,
    /// transactionId → the order in which its successful ack was answered.
    acked_seq: HashMap<String, u64>,
    /// Per partition, the offsets successfully acknowledged.
    acked_offsets: HashMap<String, BTreeSet<u64>>,
    /// Every successful ack, counted, to catch a second one.
    ack_count: HashMap<String, u32>,
    /// Messages whose ack got no answer (the kill): applied or not, unknown.
    uncertain: HashMap<String, (String, u64)>,
    violations: Vec<String>,
    deliveries: u64,
    last_delivery: Option<Instant>,
    failed_acks: u64,
    abandoned: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn competing_consumers_lose_nothing_and_ack_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    let (status, _) =
        node.post("/api/v1/configure", &json!({"queue": QUEUE, "options": {"leaseTime": 1, "retryLimit": 1000}})).await;
    assert_eq!(status, 200);

    let total = messages();
    let mut pushed = 0;
    while pushed < total {
        let items: Vec<Value> = (pushed..(pushed + 1000).min(total))
            .map(|i| json!({"queue": QUEUE, "partition": format!("p{}", i % PARTITIONS), "transactionId": format!("m{i}"), "payload": {"i": i}}))
            .collect();
        pushed += items.len() as u64;
        let (status, body) = node.post("/api/v1/push", &json!({ "items": items })).await;
        assert_eq!(status, 201, "{body}");
    }

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let acked_total = Arc::new(AtomicU64::new(0));
    let base = Arc::new(Mutex::new(node.url("")));
    let stop = Arc::new(AtomicBool::new(false));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|c| tokio::spawn(consume(c, base.clone(), ledger.clone(), acked_total.clone(), stop.clone())))
        .collect();

    // Kill the node once about half is acknowledged, and restart it.
    let deadline = Instant::now() + Duration::from_secs(600);
    while acked_total.load(Ordering::Relaxed) < total / 2 {
        assert!(Instant::now() < deadline, "consumers made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.kill9();
    node = node.restart().await;
    *base.lock().unwrap() = node.url("");
    // Done when every message is acknowledged, or its ack's outcome is
    // unknown and nothing has been delivered for long enough that any such
    // message whose ack did not apply would have come back.
    loop {
        let (settled, idle) = {
            let l = ledger.lock().unwrap();
            let settled = (l.acked.len() + l.uncertain.keys().filter(|t| !l.acked.contains_key(*t)).count()) as u64;
            (settled, l.last_delivery.is_none_or(|t| t.elapsed() > Duration::from_secs(3)))
        };
        if settled >= total && (settled == acked_total.load(Ordering::Relaxed) || idle) {
            break;
        }
        assert!(Instant::now() < deadline, "not everything was acknowledged: {}", acked_total.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for c in consumers {
        c.await.unwrap();
    }

    let l = ledger.lock().unwrap();
    assert!(
        l.violations.is_empty(),
        "{} violations, first: {:?}",
        l.violations.len(),
        &l.violations[..l.violations.len().min(5)]
    );
    let mut done = l.acked.clone();
    for (t, at) in &l.uncertain {
        done.entry(t.clone()).or_insert_with(|| at.clone());
    }
    assert_eq!(done.len() as u64, total, "every message acknowledged once (or its ack's answer lost to the kill)");
    for p in 0..PARTITIONS {
        let offsets: BTreeSet<u64> =
            done.values().filter(|(part, _)| *part == format!("p{p}")).map(|(_, o)| *o).collect();
        let expected = (total - p).div_ceil(PARTITIONS);
        assert_eq!(offsets, (0..expected).collect(), "partition p{p} acknowledged exactly its offsets");
    }
    assert!(
        l.failed_acks > 0 && l.abandoned > 0,
        "the run exercised failures ({}) and expired leases ({})",
        l.failed_acks,
        l.abandoned
    );
    eprintln!(
        "{total} messages, {} deliveries, {} failed acks, {} abandoned leases, killed once ({} acks unanswered, {} of them redelivered and acked)",
        l.deliveries,
        l.failed_acks,
        l.abandoned,
        l.uncertain.len(),
        l.uncertain.keys().filter(|t| l.acked.contains_key(*t)).count()
    );
}

async fn consume(
    id: usize,
    base: Arc<Mutex<String>>,
    ledger: Arc<Mutex<Ledger>>,
    acked_total: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(id as u64);
    while !stop.load(Ordering::Relaxed) {
        let url = base.lock().unwrap().clone();
        // What was acknowledged before this pop was sent must never come back.
        let sent_at = ledger.lock().unwrap().acked_seq.len() as u64;
        let pop = http.get(format!("{url}/api/v1/pop/queue/{QUEUE}?batch=20&wait=true&timeout=500")).send().await;
        let Ok(pop) = pop else { continue };
        if pop.status().as_u16() == 204 {
            continue;
        }
        let Ok(body) = pop.json::<Value>().await else { continue };
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        {
            let mut l = ledger.lock().unwrap();
            l.deliveries += msgs.len() as u64;
            if !msgs.is_empty() {
                l.last_delivery = Some(Instant::now());
            }
            let mut last: Option<u64> = None;
            for m in &msgs {
                let t = m["transactionId"].as_str().unwrap().to_string();
                let offset = m["offset"].as_u64().unwrap();
                if l.acked_seq.get(&t).is_some_and(|seq| *seq < sent_at) {
                    l.violations.push(format!("{t} delivered again after a successful ack"));
                }
                if let Some(prev) = last {
                    let done = l.acked_offsets.get(m["partition"].as_str().unwrap());
                    let skipped: Vec<u64> =
                        (prev + 1..offset).filter(|o| !done.is_some_and(|d| d.contains(o))).collect();
                    if offset <= prev || !skipped.is_empty() {
                        l.violations.push(format!(
                            "partition {} delivered {offset} after {prev}, skipping {skipped:?}",
                            m["partition"]
                        ));
                    }
                }
                last = Some(offset);
            }
        }
        // Abandon some leases to expire; fail one message of others.
        let roll: f64 = rng.gen();
        if roll < 0.03 {
            ledger.lock().unwrap().abandoned += 1;
            continue;
        }
        let fail_at = (roll < 0.10).then(|| rng.gen_range(0..msgs.len()));
        let (ok, failed) = match fail_at {
            Some(i) => (&msgs[..i], Some(&msgs[i])),
            None => (&msgs[..], None),
        };
        let mut acks: Vec<Value> = ok
            .iter()
            .map(|m| json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "completed"}))
            .collect();
        if let Some(m) = failed {
            acks.push(json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"], "status": "failed", "error": "random failure"}));
        }
        let answer = http.post(format!("{url}/api/v1/ack/batch")).json(&json!({"acknowledgments": acks})).send().await;
        let results = match answer {
            Ok(a) => a.json::<Vec<Value>>().await.ok(),
            Err(_) => None,
        };
        let Some(results) = results else {
            let mut l = ledger.lock().unwrap();
            for m in ok {
                let at = (m["partition"].as_str().unwrap().to_string(), m["offset"].as_u64().unwrap());
                l.uncertain.insert(m["transactionId"].as_str().unwrap().to_string(), at);
            }
            continue;
        };
        let mut l = ledger.lock().unwrap();
        for (r, m) in results.iter().zip(ok.iter().map(Some).chain(std::iter::once(failed))) {
            let Some(m) = m else { continue };
            let t = m["transactionId"].as_str().unwrap().to_string();
            if r["success"] != json!(true) {
                continue;
            }
            if failed.is_some_and(|f| f["transactionId"] == m["transactionId"]) {
                l.failed_acks += 1;
                continue;
            }
            let n = l.ack_count.entry(t.clone()).or_default();
            *n += 1;
            if *n > 1 {
                l.violations.push(format!("{t} acknowledged twice"));
            }
            let (partition, offset) = (m["partition"].as_str().unwrap().to_string(), m["offset"].as_u64().unwrap());
            let seq = l.acked_seq.len() as u64;
            l.acked_seq.insert(t.clone(), seq);
            l.acked_offsets.entry(partition.clone()).or_default().insert(offset);
            l.acked.insert(t, (partition, offset));
            acked_total.fetch_add(1, Ordering::Relaxed);
        }
    }
}
