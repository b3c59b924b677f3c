//! Append benchmarks for the single-node core, each figure beside what the
//! same harness measures of the same disk in the same run:
//!
//! - the disk: fdatasync'd sequential-write bandwidth and fdatasync latency,
//!   and per writer count the bandwidth a bare loop gets holding only what
//!   that many closed-loop writers can have unsynced (the window's ceiling);
//! - append throughput and latency of 1 KiB messages with 1, 16 and 256
//!   concurrent writers through the planner, the local replicator (group
//!   commit, fsync before every answer) and apply;
//! - qlog bytes per message for 1,000 single-partition queues at 5,000
//!   messages a second;
//! - boot time of the `queen` binary on a data directory holding 1 GiB.
//!
//! Run: `cargo bench --bench append` (QUEEN_BENCH_DIR picks the disk; the
//! default is target/bench-data; QUEEN_BENCH_SECONDS the length of each run;
//! QUEEN_BENCH_ONLY=append,fanout,boot a subset of the sections;
//! QUEEN_BENCH_WRITERS=1,256 only the append runs with those writer counts).

use queen::seams::message::Message;
use queen::seams::planner::{Command, PushItem};
use queen::Node;
use queen::Settings;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

mod harness;
use harness::{disk_bandwidth, fdatasync_latency, payload, setup, spawn_queen, window_bandwidth};

fn main() {
    let (root, length) = setup("target/bench-data");
    let rt = tokio::runtime::Runtime::new().unwrap();

    println!("## Disk ({})\n", root.display());
    let disk_bw = disk_bandwidth(&root.join("disk-bw"), 1 << 20, 256 << 20);
    let (sync_p50, sync_p99) = fdatasync_latency(&root.join("disk-lat"), 2000);
    println!("| measure | value |\n|---|---|");
    println!("| fdatasync'd sequential write, 1 MiB per fdatasync | {:.1} MB/s |", disk_bw / 1e6);
    println!("| fdatasync latency (4 KiB append), p50 / p99 | {:.3} / {:.3} ms |", ms(sync_p50), ms(sync_p99));
    let window_bw: Vec<(usize, f64)> = [1usize, 16, 256]
        .into_iter()
        .map(|writers| (writers, window_bandwidth(&root.join("disk-window"), writers * 1024)))
        .collect();
    for (writers, bw) in &window_bw {
        println!(
            "| bare loop holding {writers} KiB unsynced ({writers} writers' window): one fdatasync per {writers} KiB, or two threads of half | {:.1} MB/s |",
            bw / 1e6
        );
    }
    println!();

    let only = std::env::var("QUEEN_BENCH_ONLY").unwrap_or_default();
    let want = |section: &str| only.is_empty() || only.split(',').any(|s| s == section);
    if want("append") {
        println!("## Append, 1 KiB messages, fsync before every answer\n");
        println!("| writers | queues | logs | zstd | messages/s | MB/s of payload | % of disk bandwidth | p50 latency | p99 latency | p99 / p99 fdatasync | % of the window's ceiling | entries per group commit | syncing | CPU per message |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        let runs = [
            (1usize, 1usize, 0u32, 1),
            (16, 1, 0, 1),
            (256, 1, 0, 1),
            (256, 1, 0, 0),
            (256, 16, 0, 1),
            (256, 16, 1, 1),
        ];
        let writer_counts = std::env::var("QUEEN_BENCH_WRITERS").unwrap_or_default();
        let chosen = |writers: usize| {
            writer_counts.is_empty() || writer_counts.split(',').any(|w| w.trim() == writers.to_string())
        };
        for (writers, queues, shards, zstd) in runs.into_iter().filter(|run| chosen(run.0)) {
            let dir = root.join(format!("append-{writers}-{queues}-{shards}-{zstd}"));
            let r = rt.block_on(append_run(&dir, writers, queues, shards, zstd, length, 1024));
            let mbs = r.messages as f64 * 1024.0 / r.elapsed.as_secs_f64();
            let logs = if shards == 0 { queues.to_string() } else { shards.to_string() };
            let ceiling = window_bw.iter().find(|(w, _)| *w == writers).map_or(f64::NAN, |(_, bw)| *bw);
            println!(
                "| {writers} | {queues} | {logs} | {zstd} | {:.0} | {:.1} | {:.0}% | {:.3} ms | {:.3} ms | {:.2} | {:.0}% | {:.0} | {:.0}% | {:.1} µs |",
                r.messages as f64 / r.elapsed.as_secs_f64(),
                mbs / 1e6,
                100.0 * mbs / disk_bw,
                ms(r.p50),
                ms(r.p99),
                r.p99.as_secs_f64() / sync_p99.as_secs_f64(),
                100.0 * mbs / ceiling,
                r.per_commit,
                100.0 * r.disk_busy,
                r.cpu.as_secs_f64() * 1e6 / r.messages as f64,
            );
        }
    }
    if want("fanout") {
        println!("\n## qlog bytes per message: 1,000 single-partition queues, 5,000 messages/s\n");
        let dir = root.join("fanout");
        let (messages, bytes, payload) = rt.block_on(fanout_run(&dir, 1000, 5000, length.max(Duration::from_secs(4))));
        println!("| messages | payload per message | qlog bytes | qlog bytes per message | of which overhead |");
        println!("|---|---|---|---|---|");
        println!(
            "| {messages} | {payload} B | {bytes} | {:.0} | {:.0} |",
            bytes as f64 / messages as f64,
            bytes as f64 / messages as f64 - payload as f64
        );
    }
    if want("boot") {
        println!("\n## Boot time on a data directory holding 1 GiB of messages\n");
        let dir = root.join("boot");
        let stored = rt.block_on(fill(&dir, 1 << 30));
        let (graceful, after_kill) = boot_times(&dir);
        println!("| qlog bytes on disk | boot after SIGTERM | boot after SIGKILL (replay since the last checkpoint) |");
        println!("|---|---|---|");
        println!(
            "| {:.2} GiB | {:.2} s | {:.2} s |",
            stored as f64 / (1u64 << 30) as f64,
            graceful.as_secs_f64(),
            after_kill.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn settings(dir: &Path, shards: u32) -> Settings {
    let shards = shards.to_string();
    Settings::parse_from([
        "queen",
        "--data-dir",
        dir.to_str().unwrap(),
        "--http-addr",
        "127.0.0.1:0",
        "--qlog-shards",
        &shards,
    ])
}

fn item(queue: String, n: u64, size: usize, zstd: i32) -> PushItem {
    let message = Message::new(format!("{n:020}"), payload(size, n));
    PushItem::new(queue, "Default".into(), &message, zstd)
}

struct Run {
    messages: u64,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
    /// Entries per group commit: how many answers shared each fdatasync.
    per_commit: f64,
    /// The share of the run during which a group commit's sync was in flight.
    disk_busy: f64,
    /// CPU time of the whole process (node and writers, user and system)
    /// during the run.
    cpu: Duration,
}

/// CPU time this process has used so far, user and system.
fn cpu_used() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// `writers` concurrent writers, each pushing one message at a time to one of
/// `queues` queues (writer w to queue w % queues).
async fn append_run(
    dir: &Path,
    writers: usize,
    queues: usize,
    shards: u32,
    zstd: i32,
    length: Duration,
    size: usize,
) -> Run {
    let node = Arc::new(Node::boot(settings(dir, shards)).unwrap());
    let cpu_before = cpu_used();
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let node = node.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut n = (w as u64) << 40;
                while start.elapsed() < length {
                    let t = Instant::now();
                    node.group0()
                        .replicator
                        .propose(Command::Push(vec![item(format!("bench-{}", w % queues), n, size, zstd)]))
                        .await
                        .unwrap();
                    lat.push(t.elapsed());
                    n += 1;
                }
                lat
            })
        })
        .collect();
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed();
    let cpu = cpu_used() - cpu_before;
    let per_commit = node.metrics.entries_applied.get() as f64 / node.metrics.group_commits.get().max(1) as f64;
    let disk_busy = node.metrics.qlog_sync_seconds.get() / elapsed.as_secs_f64();
    node.group0().replicator.stop();
    lat.sort();
    Run {
        messages: lat.len() as u64,
        elapsed,
        p50: lat[lat.len() / 2],
        p99: lat[lat.len() * 99 / 100],
        per_commit,
        disk_busy,
        cpu,
    }
}

fn qlog_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for log in std::fs::read_dir(dir.join("qlog")).unwrap() {
        let log = log.unwrap().path();
        if log.is_dir() {
            for f in std::fs::read_dir(log).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "qlog") {
                    total += std::fs::metadata(f).unwrap().len();
                }
            }
        }
    }
    total
}

/// Pushes one message at a time to a random one of `queues` queues at `rate`
/// messages a second, from 64 writers; answers (messages, qlog bytes, payload size).
async fn fanout_run(dir: &Path, queues: u64, rate: u64, length: Duration) -> (u64, u64, usize) {
    const PAYLOAD: usize = 100;
    let node = Arc::new(Node::boot(settings(dir, 0)).unwrap());
    // Create the queues first, so the figure is the steady state.
    for q in 0..queues {
        node.group0().replicator.propose(Command::Push(vec![item(format!("fan-{q}"), q, PAYLOAD, 1)])).await.unwrap();
    }
    let before = qlog_bytes(dir);
    let writers = 64u64;
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let node = node.clone();
            tokio::spawn(async move {
                let mut sent = 0u64;
                let mut n = (w + 1) << 40;
                let per_writer = rate as f64 / writers as f64;
                while start.elapsed() < length {
                    let due = Duration::from_secs_f64(sent as f64 / per_writer);
                    if let Some(wait) = due.checked_sub(start.elapsed()) {
                        tokio::time::sleep(wait).await;
                    }
                    let q = n.wrapping_mul(2654435761) % queues;
                    node.group0()
                        .replicator
                        .propose(Command::Push(vec![item(format!("fan-{q}"), n, PAYLOAD, 1)]))
                        .await
                        .unwrap();
                    sent += 1;
                    n += 1;
                }
                sent
            })
        })
        .collect();
    let mut messages = 0;
    for t in tasks {
        messages += t.await.unwrap();
    }
    node.group0().replicator.stop();
    (messages, qlog_bytes(dir) - before, PAYLOAD)
}

/// Writes at least `bytes` of 1 KiB messages; answers the qlog bytes stored.
async fn fill(dir: &Path, bytes: u64) -> u64 {
    let node = Arc::new(Node::boot(settings(dir, 0)).unwrap());
    let per_push = 256u64;
    let pushes = bytes / (1024 * per_push) + 1;
    let writers = 16u64;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let node = node.clone();
            tokio::spawn(async move {
                for i in (w..pushes).step_by(writers as usize) {
                    let items =
                        (0..per_push).map(|k| item(format!("fill-{}", i % 64), i * per_push + k, 1024, 1)).collect();
                    node.group0().replicator.propose(Command::Push(items)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    node.group0().replicator.stop();
    qlog_bytes(dir)
}

/// Time from spawning `queen` to its first 200 on /health: once after a
/// graceful stop, once after a SIGKILL that follows a burst of writes.
fn boot_times(dir: &Path) -> (Duration, Duration) {
    let boot = || {
        let (child, port, took) = spawn_queen(dir);
        (child, took, port)
    };
    let (mut child, graceful, _) = boot();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    // Writes since the last checkpoint, then a kill: the next boot replays them.
    let (mut child, _, port) = boot();
    let body = r#"{"items":[{"queue":"fill-0","payload":"after"}]}"#;
    for _ in 0..200 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "POST /api/v1/push HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut s, &mut answer).unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, after_kill, _) = boot();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    (graceful, after_kill)
}
