//! HTTP API benchmarks against the release `queen` binary, beside the disk's
//! fdatasync'd bandwidth measured by the same harness in the same run:
//! push throughput (JSON and the binary QPB1 body, 1 KiB messages, batches
//! of 1 and 100) and pop+ack throughput (batches of 100).
//!
//! Run: `cargo bench --bench http` (QUEEN_BENCH_DIR picks the disk; the
//! default is target/bench-data; QUEEN_BENCH_SECONDS the length of each run).

mod harness;

use harness::{disk_bandwidth, payload, setup, spawn_queen};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 64;
const SIZE: usize = 1024;

fn main() {
    let (root, length) = setup("target/bench-data-http");
    let rt = tokio::runtime::Runtime::new().unwrap();

    let disk_bw = disk_bandwidth(&root.join("disk-bw"), 1 << 20, 256 << 20);
    println!("## HTTP API, 1 KiB messages, {CLIENTS} concurrent clients\n");
    println!("fdatasync'd sequential write, 1 MiB per fdatasync, same disk, same run: {:.1} MB/s\n", disk_bw / 1e6);
    println!("| workload | batch | messages/s | MB/s of payload | % of disk bandwidth |");
    println!("|---|---|---|---|---|");
    let (mut node, url) = start(&root.join("node"));
    for (body, batch) in [("JSON", 1usize), ("JSON", 100), ("binary QPB1", 1), ("binary QPB1", 100)] {
        let n = rt.block_on(push_run(&url, body == "JSON", batch, length));
        report(&format!("push, {body}"), batch, n, length, disk_bw);
    }
    let n = rt.block_on(pop_ack_run(&url, length));
    report("pop + ack", 100, n, length, disk_bw);
    let _ = node.kill();
    let _ = node.wait();
    let _ = std::fs::remove_dir_all(&root);
}

fn report(workload: &str, batch: usize, messages: u64, length: Duration, disk_bw: f64) {
    let per_s = messages as f64 / length.as_secs_f64();
    let mbs = per_s * SIZE as f64;
    println!("| {workload} | {batch} | {per_s:.0} | {:.1} | {:.0}% |", mbs / 1e6, 100.0 * mbs / disk_bw);
}

fn start(dir: &Path) -> (Child, String) {
    let (child, port, _) = spawn_queen(dir);
    (child, format!("http://127.0.0.1:{port}"))
}

/// A JSON string of `SIZE` bytes once quoted: incompressible text.
fn text_payload(seed: u64) -> String {
    payload(SIZE - 2, seed).iter().map(|b| (b'a' + b % 26) as char).collect()
}

fn qpb1(queue: &str, partition: &str, payloads: &[String]) -> Vec<u8> {
    let mut out = b"QPB1".to_vec();
    out.push(0);
    out.extend_from_slice(&1u32.to_le_bytes());
    for name in [queue, partition] {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    out.extend_from_slice(&(payloads.len() as u32).to_le_bytes());
    for p in payloads {
        let json = serde_json::to_vec(p).unwrap();
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
    }
    out
}

async fn push_run(url: &str, json_body: bool, batch: usize, length: Duration) -> u64 {
    let pushed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (url, pushed) = (format!("{url}/api/v1/push"), pushed.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let (queue, partition) = (format!("bench-{}", c % 8), format!("p{c}"));
                let mut seed = (c as u64) << 32;
                while start.elapsed() < length {
                    let payloads: Vec<String> = (0..batch).map(|i| text_payload(seed + i as u64)).collect();
                    seed += batch as u64;
                    let request = if json_body {
                        let items: Vec<Value> = payloads
                            .iter()
                            .map(|p| json!({"queue": queue, "partition": partition, "payload": p}))
                            .collect();
                        http.post(&url).json(&json!({ "items": items }))
                    } else {
                        http.post(&url)
                            .header("content-type", "application/x-queen-push")
                            .body(qpb1(&queue, &partition, &payloads))
                    };
                    let r = request.send().await.unwrap();
                    assert_eq!(r.status().as_u16(), 201);
                    pushed.fetch_add(batch as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    pushed.load(Ordering::Relaxed)
}

async fn pop_ack_run(url: &str, length: Duration) -> u64 {
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (url, done) = (url.to_string(), done.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let queue = format!("bench-{}", c % 8);
                while start.elapsed() < length {
                    let r = http.get(format!("{url}/api/v1/pop/queue/{queue}?batch=100&wait=false")).send().await.unwrap();
                    if r.status().as_u16() == 204 {
                        continue;
                    }
                    let body: Value = r.json().await.unwrap();
                    let acks: Vec<Value> = body["messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]}))
                        .collect();
                    let n = acks.len() as u64;
                    let r = http.post(format!("{url}/api/v1/ack/batch")).json(&json!({"acknowledgments": acks})).send().await.unwrap();
                    assert_eq!(r.status().as_u16(), 200);
                    done.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed)
}
