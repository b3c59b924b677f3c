//! The cost of a KV read, on one node and on a three-node cluster, beside
//! the cost of a KV write in the same run. On a cluster a read is answered
//! only once the leader has confirmed with a quorum that it still leads
//! (a read index round, `src/replicate/raft/read_confirm.rs`), and a write
//! once a majority holds it fdatasynced; on one node neither waits for
//! anything but the node itself (a write for its fdatasync).
//!
//! Each workload runs one client calling in a loop (the latency of one
//! call) and 64 concurrent clients (the throughput, where one read index
//! round serves every read waiting when it starts). On the cluster the
//! calls go to the leader and to a follower, which forwards to the leader.
//!
//! Run: `cargo bench --bench kv` (QUEEN_BENCH_SECONDS the length of each
//! run, 5 by default; QUEEN_BENCH_BIN another build's binary to compare).

mod harness;

use harness::{queen_binary, setup, spawn_cluster, spawn_queen_with_kafka};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLIENTS: usize = 64;
const KEYS: usize = 256;

fn main() {
    let (root, length) = setup("target/bench-data-kv");
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!("## KV calls, one key each ({})\n", queen_binary().display());
    println!("| cluster | node called | call | clients | calls/s | p50 | p99 |");
    println!("|---|---|---|---|---|---|---|");

    let (mut node, port, _, _) = spawn_queen_with_kafka(&root.join("node"), &[]);
    rt.block_on(run_all("one node", "the node", port, length));
    let _ = node.kill();
    let _ = node.wait();

    let (mut cluster, leader) = spawn_cluster(&root.join("cluster"), 3, &[]);
    let follower = (leader + 1) % 3;
    for (role, i) in [("leader", leader), ("follower (forwards)", follower)] {
        rt.block_on(run_all("three nodes", role, cluster[i].1, length));
    }
    for (child, _, _) in &mut cluster {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&root);
}

async fn run_all(cluster: &str, role: &str, port: u16, length: Duration) {
    let url = format!("http://127.0.0.1:{port}/api/v1/kv");
    // Every key holds a value before the reads.
    let http = reqwest::Client::new();
    for k in 0..KEYS {
        let r = http.post(&url).json(&call("put", k, 0)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "the setup's put of key {k}");
    }
    for op in ["get", "put"] {
        for clients in [1, CLIENTS] {
            let (calls, latencies) = run(&url, op, clients, length).await;
            report(cluster, role, op, clients, calls, length, latencies);
        }
    }
}

fn call(op: &str, key: usize, value: u64) -> Value {
    let mut one = json!({"op": op, "ns": "bench", "key": format!("k{key}")});
    if op == "put" {
        one["value"] = json!(value);
        one["forever"] = json!(true);
    }
    json!({ "operations": [one] })
}

/// `clients` clients calling `op` in a loop for `length`: how many calls
/// were answered, and each call's latency.
async fn run(url: &str, op: &'static str, clients: usize, length: Duration) -> (u64, Vec<Duration>) {
    let done = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (url, done, latencies) = (url.to_string(), done.clone(), latencies.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let mut mine = Vec::new();
                let mut i = c as u64;
                while start.elapsed() < length {
                    let at = Instant::now();
                    let r = http.post(&url).json(&call(op, (i as usize) % KEYS, i)).send().await.unwrap();
                    assert_eq!(r.status().as_u16(), 200, "a KV {op}");
                    let body: Value = r.json().await.unwrap();
                    assert!(body["results"][0].is_object(), "a KV {op} answered {body}");
                    mine.push(at.elapsed());
                    done.fetch_add(1, Ordering::Relaxed);
                    i += clients as u64;
                }
                latencies.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    (done.load(Ordering::Relaxed), latencies)
}

fn report(cluster: &str, role: &str, op: &str, clients: usize, calls: u64, took: Duration, mut lat: Vec<Duration>) {
    lat.sort_unstable();
    let at = |q: f64| lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1))).copied();
    let ms = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2} ms", d.as_secs_f64() * 1e3));
    let per_s = calls as f64 / took.as_secs_f64();
    println!("| {cluster} | {role} | {op} | {clients} | {per_s:.0} | {} | {} |", ms(at(0.5)), ms(at(0.99)));
}
