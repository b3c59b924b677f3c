//! Kafka facade benchmarks against the release `queen` binary, beside the
//! disk's fdatasync'd bandwidth measured by the same harness in the same
//! run: produce throughput (acks=-1, 1 KiB records, one record or 100 per
//! request, 64 connections over 8 partitions) and fetch throughput (one
//! consumer reading everything back from offset 0).
//!
//! Run: `cargo bench --bench kafka` (QUEEN_BENCH_DIR picks the disk; the
//! default is target/bench-data-kafka; QUEEN_BENCH_SECONDS the length of
//! each produce run).

mod harness;

// The tests' minimal client; the bench uses its connection and batches,
// not its fault-test writer.
#[path = "../tests/common/kafka.rs"]
#[allow(dead_code)]
mod kafka_conn;

use harness::{disk_bandwidth, payload, setup, spawn_cluster, spawn_queen_with_kafka};
use kafka_conn::{batch, KafkaConn};
use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{ApiKey, FetchRequest, ProduceRequest, RequestKind, ResponseKind, TopicName};
use protocol::StrBytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONNECTIONS: usize = 64;
const PARTITIONS: i32 = 8;
const SIZE: usize = 1024;
const TOPIC: &str = "bench";

fn main() {
    let (root, length) = setup("target/bench-data-kafka");
    let rt = tokio::runtime::Runtime::new().unwrap();

    let disk_bw = disk_bandwidth(&root.join("disk-bw"), 1 << 20, 256 << 20);
    println!("## Kafka facade, 1 KiB records, acks=-1, {CONNECTIONS} connections over {PARTITIONS} partitions\n");
    println!("fdatasync'd sequential write, 1 MiB per fdatasync, same disk, same run: {:.1} MB/s\n", disk_bw / 1e6);
    println!("| workload | records per request | records/s | MB/s of values | % of disk bandwidth |");
    println!("|---|---|---|---|---|");
    let (mut node, _, port, _) = spawn_queen_with_kafka(&root.join("node"), &[("QUEEN_KAFKA_NUM_PARTITIONS", "8")]);
    let mut total = 0;
    for per_request in [1usize, 100] {
        let (n, _) = rt.block_on(produce_run(port, per_request, length));
        total += n;
        report("produce", per_request, n, length, disk_bw);
    }
    let started = Instant::now();
    let read = rt.block_on(fetch_all(port));
    assert_eq!(read, total, "the consumer reads back every record produced");
    report("fetch (one consumer)", 0, read, started.elapsed(), disk_bw);
    let _ = node.kill();
    let _ = node.wait();

    // The same produce runs against a three-node cluster on this machine:
    // each answer waits until a majority holds the entry fdatasynced.
    println!("\n## The same on a three-node cluster on this machine (acks=-1: a majority fdatasynced)\n");
    println!("| node produced to | records per request | records/s | MB/s of values | p50 | p99 |");
    println!("|---|---|---|---|---|---|");
    let (mut cluster, leader) = spawn_cluster(&root.join("cluster"), 3, &[("QUEEN_KAFKA_NUM_PARTITIONS", "8")]);
    let follower = (leader + 1) % 3;
    for (role, i) in [("leader", leader), ("follower (forwards)", follower)] {
        for per_request in [1usize, 100] {
            let (n, latencies) = rt.block_on(produce_run(cluster[i].2, per_request, length));
            report_cluster(role, per_request, n, length, &latencies);
        }
    }
    for (child, _, _) in &mut cluster {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&root);
}

fn report_cluster(role: &str, per_request: usize, records: u64, took: Duration, latencies: &[Duration]) {
    let per_s = records as f64 / took.as_secs_f64();
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))).copied();
    let ms = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3));
    println!(
        "| {role} | {per_request} | {per_s:.0} | {:.1} | {} | {} |",
        per_s * SIZE as f64 / 1e6,
        ms(at(0.5)),
        ms(at(0.99))
    );
}

fn report(workload: &str, per_request: usize, records: u64, took: Duration, disk_bw: f64) {
    let per_s = records as f64 / took.as_secs_f64();
    let mbs = per_s * SIZE as f64;
    let per_request = if per_request == 0 { "up to 1 MiB".to_string() } else { per_request.to_string() };
    println!("| {workload} | {per_request} | {per_s:.0} | {:.1} | {:.0}% |", mbs / 1e6, 100.0 * mbs / disk_bw);
}

fn topic_name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

/// Produces from every connection for `length`; answers the records
/// produced and each request's latency.
async fn produce_run(port: u16, per_request: usize, length: Duration) -> (u64, Vec<Duration>) {
    let produced = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|c| {
            let produced = produced.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut conn = KafkaConn::connect(port).await;
                let partition = c as i32 % PARTITIONS;
                let mut seed = (c as u64) << 32;
                while start.elapsed() < length {
                    let values: Vec<String> = (0..per_request)
                        .map(|i| payload(SIZE, seed + i as u64).iter().map(|b| (b'a' + b % 26) as char).collect())
                        .collect();
                    seed += per_request as u64;
                    let data = PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(batch(-1, -1, -1, &values)));
                    let topic = TopicProduceData::default().with_name(topic_name()).with_partition_data(vec![data]);
                    let request =
                        ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![topic]);
                    let sent = Instant::now();
                    let ResponseKind::Produce(r) = conn.call(ApiKey::Produce, 9, RequestKind::Produce(request)).await
                    else {
                        panic!("not a produce answer")
                    };
                    latencies.push(sent.elapsed());
                    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
                    produced.fetch_add(per_request as u64, Ordering::Relaxed);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    (produced.load(Ordering::Relaxed), latencies)
}

/// Reads every partition from offset 0 to its end; answers the record count.
async fn fetch_all(port: u16) -> u64 {
    let mut conn = KafkaConn::connect(port).await;
    let mut offsets = vec![0i64; PARTITIONS as usize];
    let mut ends = vec![i64::MAX; PARTITIONS as usize];
    let mut count = 0u64;
    while offsets.iter().zip(&ends).any(|(o, e)| o < e) {
        let partitions = (0..PARTITIONS)
            .map(|p| {
                FetchPartition::default()
                    .with_partition(p)
                    .with_fetch_offset(offsets[p as usize])
                    .with_partition_max_bytes(1 << 20)
            })
            .collect();
        let topic = FetchTopic::default().with_topic(topic_name()).with_partitions(partitions);
        let request = FetchRequest::default().with_max_wait_ms(0).with_max_bytes(8 << 20).with_topics(vec![topic]);
        let ResponseKind::Fetch(r) = conn.call(ApiKey::Fetch, 12, RequestKind::Fetch(request)).await else {
            panic!("not a fetch answer")
        };
        for p in &r.responses[0].partitions {
            let i = p.partition_index as usize;
            ends[i] = p.high_watermark;
            let records = protocol::records::decode_fetched(p.records.clone().unwrap_or_default()).unwrap();
            count += records.len() as u64;
            if let Some((last, _)) = records.last() {
                offsets[i] = last + 1;
            }
        }
    }
    count
}
