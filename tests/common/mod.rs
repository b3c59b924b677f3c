//! Starting real `queen` processes for the integration tests, and speaking
//! HTTP to them.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod cluster;
pub mod crash;
pub mod kafka;
pub mod netns;
pub mod tls;
pub mod volume;

pub const BIN: &str = env!("CARGO_BIN_EXE_queen");

/// A port no one listens on, picked below the kernel's ephemeral range
/// (32768 and up): a port the kernel handed out with `bind(:0)` can be given
/// again as the local end of an outgoing connection while a killed node is
/// down, and its restart on that port then fails with "address in use".
pub fn free_port() -> u16 {
    free_ports_in_a_row(1)
}

/// The first of `n` consecutive free ports, picked as [`free_port`] picks
/// one. A process-wide cursor hands each port out once, so the tests of one
/// binary never pick the same port twice nor overlap two runs; a start drawn
/// from the pid and the clock keeps two binaries apart.
pub fn free_ports_in_a_row(n: u32) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    if NEXT.load(Ordering::Relaxed) == u32::MAX {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let start = (std::process::id().wrapping_mul(7919) ^ nanos) % SPAN;
        let _ = NEXT.compare_exchange(u32::MAX, start, Ordering::Relaxed, Ordering::Relaxed);
    }
    for _ in 0..SPAN {
        let first = NEXT.fetch_add(n, Ordering::Relaxed) % SPAN;
        if first + n > SPAN {
            continue;
        }
        let free = (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", (LOW + first + i) as u16)).is_ok());
        if free {
            return (LOW + first) as u16;
        }
    }
    panic!("no {n} free ports in a row between {LOW} and {}", LOW + SPAN)
}

/// A running node.
pub struct Node {
    pub child: Child,
    pub port: u16,
    pub kafka_port: u16,
    pub dir: PathBuf,
    pub log: PathBuf,
    env: Vec<(String, String)>,
    pub http: reqwest::Client,
}

fn command(dir: &Path, port: u16, env: &[(String, String)], log: &Path) -> (Command, u16) {
    let kafka_port = free_port();
    let mut c = Command::new(BIN);
    c.env("QUEEN_RAFT_DIR", dir)
        .env("QUEEN_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("QUEEN_KAFKA_ADDR", format!("127.0.0.1:{kafka_port}"))
        .env("QUEEN_LOG", "info")
        // The tests are about the node, not the machine's free space: the
        // disk gate closes only on a nearly full volume unless a test says.
        .env("QUEEN_STORAGE_FULL_PCT", "99")
        .stdout(Stdio::null())
        .stderr(std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    (c, kafka_port)
}

impl Node {
    /// Starts a node on `dir` and waits until it answers `/health`.
    /// A port picked free can be taken by another process's outgoing
    /// connection before the node binds it; the node is then started again on
    /// fresh ports.
    pub async fn start(dir: &Path, env: &[(&str, &str)]) -> Node {
        Node::start_with_client(dir, env, reqwest::Client::new()).await
    }

    /// As [`Node::start`], speaking HTTP through `http` (an HTTPS client
    /// that trusts the node's CA when the env turns QUEEN_HTTP_TLS on).
    pub async fn start_with_client(dir: &Path, env: &[(&str, &str)], http: reqwest::Client) -> Node {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        // One log for every attempt: a boot that dies on a taken port may
        // have cut a torn tail first, and a test may look for that line.
        let log = dir.with_extension(format!("{}.log", free_port()));
        // A fixed port (a cluster node's raft port, started again after a
        // stop) can stay taken for a moment; fresh picks cannot, so the wait
        // grows only between attempts.
        for attempt in 0..8u64 {
            tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
            let port = free_port();
            let from = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);
            let (mut command, kafka_port) = command(dir, port, &env, &log);
            let child = command.spawn().expect("spawn queen");
            let mut node = Node {
                child,
                port,
                kafka_port,
                dir: dir.to_path_buf(),
                log: log.clone(),
                env: env.clone(),
                http: http.clone(),
            };
            if node.wait_healthy(from).await {
                return node;
            }
        }
        panic!("eight starts in a row found a port taken; log:\n{}", std::fs::read_to_string(&log).unwrap_or_default())
    }

    /// Starts the node again on the same directory and settings.
    pub async fn restart(self) -> Node {
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Node::start_with_client(&self.dir, &env, self.http.clone()).await
    }

    /// True once healthy, or waiting to be added to a cluster (503
    /// `joining`, as a node started with QUEEN_RAFT_JOIN answers until it
    /// is); false when the node exited because a port was taken. Only the
    /// log past byte `from` is this attempt's, and its "listening" line
    /// proves that the node answering is this one, not another test's that
    /// holds the port.
    async fn wait_healthy(&mut self, from: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let listening = self.log_text().get(from..).is_some_and(|new| new.contains("HTTP API listening"));
            if listening {
                if let Ok(r) = self.http.get(self.url("/health")).send().await {
                    if r.status().is_success() {
                        return true;
                    }
                    let body: Value = r.json().await.unwrap_or_default();
                    if body["status"] == "joining" {
                        return true;
                    }
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                if self.log_text().get(from..).is_some_and(|new| new.contains("Address already in use")) {
                    return false;
                }
                panic!("node exited with {status} before it was healthy; log:\n{}", self.log_text());
            }
            assert!(Instant::now() < deadline, "node did not become healthy; log:\n{}", self.log_text());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        let https = self.env.iter().any(|(k, v)| k == "QUEEN_HTTP_TLS" && v == "true");
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// A counter's value from `/metrics`.
    pub async fn counter(&self, name: &str) -> u64 {
        let metrics = self.http.get(self.url("/metrics")).send().await.unwrap().text().await.unwrap();
        let line = metrics.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in {metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the graceful stop (final checkpoint included).
    pub fn terminate(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert!(status.success(), "graceful stop failed: {status:?}\n{}", self.log_text());
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.http.post(self.url(path)).json(body).send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post_raw(&self, path: &str, body: Vec<u8>) -> (u16, Value) {
        let r = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Every record of a partition, read by offset from 0.
    pub async fn read_all(&self, queue: &str, partition: &str) -> PartitionRead {
        self.read_from(queue, partition, 0).await
    }

    /// Every record of a partition from offset `from` on, with the log
    /// start and high watermark the last fetch answered.
    pub async fn read_from(&self, queue: &str, partition: &str, from: u64) -> PartitionRead {
        let mut out = PartitionRead::default();
        let mut offset = from;
        loop {
            let (status, body) = self
                .post(
                    "/api/v1/fetch",
                    &json!({"entries": [{"queue": queue, "partition": partition, "offset": offset}]}),
                )
                .await;
            assert_eq!(status, 200, "fetch failed: {body}");
            let e = &body["entries"][0];
            out.high_watermark = e["highWatermark"].as_u64().unwrap();
            out.log_start = e["logStartOffset"].as_u64().unwrap();
            if e["error"].is_string() {
                out.error = e["error"].as_str().map(str::to_string);
                return out;
            }
            let records = e["records"].as_array().unwrap();
            if records.is_empty() {
                return out;
            }
            for r in records {
                out.records.push((
                    r["offset"].as_u64().unwrap(),
                    r["transactionId"].as_str().unwrap().to_string(),
                    r["payload"].clone(),
                ));
            }
            offset = out.records.last().unwrap().0 + 1;
            if offset >= out.high_watermark {
                return out;
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default, Debug)]
pub struct PartitionRead {
    pub records: Vec<(u64, String, Value)>,
    pub high_watermark: u64,
    pub log_start: u64,
    pub error: Option<String>,
}

/// Runs the binary on `dir` expecting it to refuse to boot; answers its stderr.
pub fn expect_refusal(dir: &Path, env: &[(&str, &str)]) -> String {
    let (code, text) = run_until_exit(dir, env, Duration::from_secs(30));
    assert_eq!(code, Some(70), "expected the FATAL exit code; log:\n{text}");
    text
}

/// Runs a node on `dir` until it exits by itself (at most `within`):
/// answers its exit code and its log.
pub fn run_until_exit(dir: &Path, env: &[(&str, &str)], within: Duration) -> (Option<i32>, String) {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let port = free_port();
    let log = dir.with_extension("exit.log");
    let _ = std::fs::remove_file(&log);
    let mut child = command(dir, port, &env, &log).0.spawn().expect("spawn queen");
    let deadline = Instant::now() + within;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("node did not exit within {within:?}; log:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), std::fs::read_to_string(&log).unwrap_or_default())
}

/// A push of `items` (each `(queue, partition, transactionId, payload)`).
pub fn push_body(items: &[(String, String, String, Value)]) -> Value {
    json!({"items": items.iter().map(|(q, p, t, v)| json!({"queue": q, "partition": p, "transactionId": t, "payload": v})).collect::<Vec<_>>()})
}

/// The qlog files of a data directory, by log directory name.
pub fn qlog_files(dir: &Path) -> HashMap<String, Vec<PathBuf>> {
    let mut out: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for d in std::fs::read_dir(dir.join("qlog")).unwrap() {
        let d = d.unwrap();
        if d.file_type().unwrap().is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(d.path())
                .unwrap()
                .map(|f| f.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "qlog"))
                .collect();
            files.sort();
            out.insert(d.file_name().to_string_lossy().into_owned(), files);
        }
    }
    out
}
