//! What every benchmark shares: the disk measures set beside its figures
//! in the same run (fdatasync'd sequential-write bandwidth, fdatasync
//! latency), incompressible payloads, and starting the `queen` binary.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Incompressible bytes, so zstd stores them raw and the disk sees every byte.
/// Made a word at a time: the load generator shares the broker's cores.
pub fn payload(size: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut bytes = Vec::with_capacity(size + 8);
    while bytes.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.truncate(size);
    bytes
}

pub fn disk_bandwidth(path: &Path, chunk: usize, total: usize) -> f64 {
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(path).unwrap();
    let buf = payload(chunk, 1);
    let start = Instant::now();
    for _ in 0..total / chunk {
        f.write_all(&buf).unwrap();
        f.sync_data().unwrap();
    }
    let bw = total as f64 / start.elapsed().as_secs_f64();
    std::fs::remove_file(path).unwrap();
    bw
}

/// The most a bare loop gets from the disk while it holds at most `window`
/// unsynced bytes, as closed-loop writers whose messages add up to `window`
/// can: the better of one thread that writes and fdatasyncs the whole window
/// at a time and two threads that each do so with half of it, side by side
/// in one file. No design answering each writer after an fdatasync can beat
/// it on this disk.
pub fn window_bandwidth(path: &Path, window: usize) -> f64 {
    let total = (window * 2000).min(128 << 20);
    let run = |threads: usize| {
        let f = OpenOptions::new().create(true).write(true).truncate(true).open(path).unwrap();
        let chunk = window / threads;
        let buf = payload(chunk, 3);
        let next = AtomicUsize::new(0);
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let at = next.fetch_add(chunk, Ordering::Relaxed);
                    if at >= total {
                        return;
                    }
                    f.write_all_at(&buf, at as u64).unwrap();
                    f.sync_data().unwrap();
                });
            }
        });
        total as f64 / start.elapsed().as_secs_f64()
    };
    let best = run(1).max(run(2));
    std::fs::remove_file(path).unwrap();
    best
}

pub fn fdatasync_latency(path: &Path, n: usize) -> (Duration, Duration) {
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(path).unwrap();
    let buf = payload(4096, 2);
    let mut lat: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f.write_all(&buf).unwrap();
            f.sync_data().unwrap();
            t.elapsed()
        })
        .collect();
    std::fs::remove_file(path).unwrap();
    lat.sort();
    (lat[n / 2], lat[n * 99 / 100])
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the `queen` binary on `dir`; answers it, its HTTP port, and how
/// long it took until the port accepted (the node binds it after recovery).
pub fn spawn_queen(dir: &Path) -> (std::process::Child, u16, Duration) {
    let (child, port, _, took) = spawn_queen_with_kafka(dir, &[]);
    (child, port, took)
}

/// As `spawn_queen`, with extra settings, answering the Kafka port too.
pub fn spawn_queen_with_kafka(dir: &Path, env: &[(&str, &str)]) -> (std::process::Child, u16, u16, Duration) {
    let (port, kafka_port) = (free_port(), free_port());
    let start = Instant::now();
    let child = std::process::Command::new(queen_binary())
        .env("QUEEN_RAFT_DIR", dir)
        .env("QUEEN_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("QUEEN_KAFKA_ADDR", format!("127.0.0.1:{kafka_port}"))
        .envs(env.iter().copied())
        .env("QUEEN_LOG", "warn")
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(2));
    }
    (child, port, kafka_port, start.elapsed())
}

/// The `queen` binary a bench runs: this build's, or another build's named
/// by QUEEN_BENCH_BIN (an old build set beside the new one in one sitting).
pub fn queen_binary() -> PathBuf {
    std::env::var_os("QUEEN_BENCH_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_queen")), PathBuf::from)
}

/// A bench's fresh working directory (QUEEN_BENCH_DIR, else `default`
/// under the current directory) and the length of each run
/// (QUEEN_BENCH_SECONDS, 5 by default).
pub fn setup(default: &str) -> (PathBuf, Duration) {
    let root = std::env::var("QUEEN_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from(default));
    let seconds: u64 = std::env::var("QUEEN_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    (root, Duration::from_secs(seconds))
}

/// A cluster of `n` release `queen` processes on loopback (ids 1..=n), each
/// with its own directory under `root`; answers each node's child, HTTP
/// port and Kafka port once every node names the same leader, and the
/// leader's position in the list.
pub fn spawn_cluster(root: &Path, n: usize, env: &[(&str, &str)]) -> (Vec<(std::process::Child, u16, u16)>, usize) {
    let raft: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let peers: Vec<String> = raft.iter().enumerate().map(|(i, p)| format!("{}=127.0.0.1:{p}", i + 1)).collect();
    let peers = peers.join(",");
    let mut nodes = Vec::new();
    for (i, raft_port) in raft.iter().enumerate() {
        let id = (i + 1).to_string();
        let addr = format!("127.0.0.1:{raft_port}");
        let mut all = env.to_vec();
        all.extend([
            ("QUEEN_RAFT_NODE_ID", id.as_str()),
            ("QUEEN_RAFT_PEERS", peers.as_str()),
            ("QUEEN_RAFT_ADDR", addr.as_str()),
            ("QUEEN_RAFT_TOKEN", "bench"),
        ]);
        let (child, port, kafka_port, _) = spawn_queen_with_kafka(&root.join(format!("node-{}", i + 1)), &all);
        nodes.push((child, port, kafka_port));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leaders: Vec<Option<u64>> = nodes.iter().map(|(_, port, _)| leader_of(*port)).collect();
        if let Some(Some(l)) = leaders.first() {
            if leaders.iter().all(|x| *x == Some(*l)) {
                return (nodes, *l as usize - 1);
            }
        }
        assert!(Instant::now() < deadline, "the bench cluster did not agree on a leader: {leaders:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The leader a node's `/health` names, asked over a plain socket.
fn leader_of(port: u16) -> Option<u64> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /health HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let body = text.split("\r\n\r\n").nth(1)?;
    let health: serde_json::Value = serde_json::from_str(body).ok()?;
    health["raft"]["leader"].as_u64()
}
