//! A cluster whose nodes each live in a network namespace of their own, at
//! their own address on one bridge, so a test can cut links between nodes
//! (iptables DROP inside a namespace) while it still reaches every node
//! from the bridge's own address. Needs root, iproute2 and iptables.

use super::BIN;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NsCluster {
    /// A tag in every namespace and link name, so parallel tests do not meet.
    tag: String,
    subnet: String,
    pub nodes: Vec<Option<Child>>,
    pub dirs: Vec<PathBuf>,
    /// QUEEN_RAFT_PEERS, to start a node again.
    peers: String,
    pub http: reqwest::Client,
    _tmp: tempfile::TempDir,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip (iproute2)");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// Whether this process may make namespaces; a test that needs them says
/// so and stops when it may not (`.ci/run` runs as root with iptables).
pub fn available() -> bool {
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["ip", "iptables"].iter().all(|t| Command::new(t).arg("--version").output().is_ok());
    if !(root && tools) {
        eprintln!("skipped: network namespaces need root, iproute2 and iptables (.ci/run has them)");
    }
    root && tools
}

impl NsCluster {
    /// Starts `n` nodes, node i at 10.201.S.i in namespace `q{tag}n{i}`.
    pub async fn start(n: usize, slot: u8) -> NsCluster {
        let tag = format!("{}{slot}", std::process::id() % 10000);
        let subnet = format!("10.201.{slot}");
        let bridge = format!("qb{tag}");
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["addr", "add", &format!("{subnet}.254/24"), "dev", &bridge]);
        ip(&["link", "set", &bridge, "up"]);
        let tmp = tempfile::tempdir().unwrap();
        let peers: Vec<String> = (1..=n).map(|i| format!("{i}={subnet}.{i}:7400")).collect();
        let peers = peers.join(",");
        let mut cluster = NsCluster {
            tag,
            subnet,
            nodes: Vec::new(),
            dirs: Vec::new(),
            peers: peers.clone(),
            http: reqwest::Client::builder().timeout(Duration::from_secs(15)).build().unwrap(),
            _tmp: tmp,
        };
        for i in 1..=n {
            let ns = cluster.ns(i);
            let veth = format!("qv{}n{i}", cluster.tag);
            ip(&["netns", "add", &ns]);
            ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns]);
            ip(&["link", "set", &veth, "master", &bridge, "up"]);
            ip(&["-n", &ns, "addr", "add", &format!("{}.{i}/24", cluster.subnet), "dev", "eth0"]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            let dir = cluster._tmp.path().join(format!("node-{i}"));
            cluster.dirs.push(dir);
            cluster.nodes.push(None);
            cluster.boot(i, &peers);
        }
        for i in 1..=n {
            cluster.wait_healthy(i).await;
        }
        cluster
    }

    /// Kills node `i` with SIGKILL.
    pub fn kill9(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i - 1].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `i` again on its directory, and waits until it answers.
    pub async fn restart(&mut self, i: usize) {
        let peers = self.peers.clone();
        self.boot(i, &peers);
        self.wait_healthy(i).await;
    }

    /// Sends `signal` (SIGSTOP, SIGCONT) to node `i`.
    pub fn signal(&self, i: usize, signal: i32) {
        let child = self.nodes[i - 1].as_ref().expect("a running node");
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0, "signal {signal} to node {i}");
    }

    fn ns(&self, i: usize) -> String {
        format!("q{}n{i}", self.tag)
    }

    pub fn addr(&self, i: usize) -> String {
        format!("{}.{i}", self.subnet)
    }

    pub fn url(&self, i: usize, path: &str) -> String {
        format!("http://{}:6632{path}", self.addr(i))
    }

    fn boot(&mut self, i: usize, peers: &str) {
        let log =
            std::fs::OpenOptions::new().create(true).append(true).open(self.dirs[i - 1].with_extension("log")).unwrap();
        let addr = self.addr(i);
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(i), BIN])
            .env("QUEEN_RAFT_DIR", &self.dirs[i - 1])
            .env("QUEEN_HTTP_ADDR", format!("{addr}:6632"))
            .env("QUEEN_KAFKA_ADDR", format!("{addr}:9092"))
            .env("QUEEN_RAFT_ADDR", format!("{addr}:7400"))
            .env("QUEEN_RAFT_NODE_ID", i.to_string())
            .env("QUEEN_RAFT_PEERS", peers)
            .env("QUEEN_RAFT_TOKEN", "netns-test")
            .env("QUEEN_RAFT_WRITE_TIMEOUT_MS", "5000")
            .env("QUEEN_STORAGE_FULL_PCT", "99")
            .env("QUEEN_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a node in its namespace");
        self.nodes[i - 1] = Some(child);
    }

    async fn wait_healthy(&self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.http.get(self.url(i, "/health")).send().await.is_err() {
            assert!(Instant::now() < deadline, "node {i} did not answer; log:\n{}", self.log(i));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dirs[i - 1].with_extension("log")).unwrap_or_default()
    }

    pub async fn health(&self, i: usize) -> Option<Value> {
        self.http.get(self.url(i, "/health")).send().await.ok()?.json().await.ok()
    }

    /// The leader that every node in `asked` names, once they agree.
    pub async fn leader_among(&self, asked: &[usize]) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut named = Vec::new();
            for &i in asked {
                named.push(self.health(i).await.and_then(|h| h["raft"]["leader"].as_u64()));
            }
            if let Some(Some(l)) = named.first().copied() {
                if named.iter().all(|n| *n == Some(l)) && asked.contains(&(l as usize)) {
                    return l as usize;
                }
            }
            assert!(Instant::now() < deadline, "nodes {asked:?} did not agree on a leader among them: {named:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Drops every packet between nodes `a` and `b`, both ways.
    pub fn cut(&self, a: usize, b: usize) {
        for (here, there) in [(a, b), (b, a)] {
            for (chain, flag) in [("INPUT", "-s"), ("OUTPUT", "-d")] {
                let status = Command::new("ip")
                    .args([
                        "netns",
                        "exec",
                        &self.ns(here),
                        "iptables",
                        "-A",
                        chain,
                        flag,
                        &self.addr(there),
                        "-j",
                        "DROP",
                    ])
                    .status()
                    .expect("run iptables");
                assert!(status.success(), "iptables in node {here}'s namespace");
            }
        }
    }

    /// Lifts every cut.
    pub fn heal(&self) {
        for i in 1..=self.nodes.len() {
            for chain in ["INPUT", "OUTPUT"] {
                let _ = Command::new("ip").args(["netns", "exec", &self.ns(i), "iptables", "-F", chain]).status();
            }
        }
    }
}

impl Drop for NsCluster {
    fn drop(&mut self) {
        for child in self.nodes.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for i in 1..=self.nodes.len() {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(i)]).status();
        }
        let _ = Command::new("ip").args(["link", "del", &format!("qb{}", self.tag)]).status();
    }
}

impl NsCluster {
    /// Every record of a partition through node `i`: (offset, transactionId).
    pub async fn read_all(&self, i: usize, queue: &str, partition: &str) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        loop {
            let offset = out.last().map_or(0, |(o, _): &(u64, String)| o + 1);
            let body = serde_json::json!({"entries": [{"queue": queue, "partition": partition, "offset": offset}]});
            let r = self.http.post(self.url(i, "/api/v1/fetch")).json(&body).send().await.expect("fetch");
            assert_eq!(r.status().as_u16(), 200, "fetch through node {i}");
            let v: Value = r.json().await.unwrap();
            let records = v["entries"][0]["records"].as_array().cloned().unwrap_or_default();
            if records.is_empty() {
                return out;
            }
            for r in records {
                out.push((r["offset"].as_u64().unwrap(), r["transactionId"].as_str().unwrap().to_string()));
            }
        }
    }

    /// Every node in `nodes` serves every write of `ledger` in `partition`
    /// of `queue` at its acknowledged offset, gapless and once each.
    pub async fn check_ledger(
        &self,
        nodes: &[usize],
        ledger: &std::collections::HashMap<String, (String, u64)>,
        queue: &str,
        partition: &str,
    ) {
        let acked = ledger.values().filter(|(p, _)| p == partition).count();
        for &i in nodes {
            let deadline = Instant::now() + Duration::from_secs(20);
            let read = loop {
                let read = self.read_all(i, queue, partition).await;
                if read.len() >= acked || Instant::now() > deadline {
                    break read;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            super::cluster::assert_ledger(i, &read, ledger, partition);
        }
    }
}
