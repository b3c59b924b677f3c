//! A cluster of real `queen` processes on loopback, for the raft tests.

use super::{free_port, push_body, Node};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// transactionId → (partition, offset), for every acknowledged push.
pub type Ledger = Arc<Mutex<HashMap<String, (String, u64)>>>;

pub struct Cluster {
    pub nodes: Vec<Option<Node>>,
    /// Each node's environment, to start it again.
    pub env: Vec<Vec<(String, String)>>,
    pub tmp: tempfile::TempDir,
}

impl Cluster {
    /// Starts `size` nodes with ids 1..=size on loopback, each with its
    /// own raft port, founding one cluster.
    pub async fn start(size: u64) -> Cluster {
        Cluster::start_with(size, &[]).await
    }

    /// As [`Cluster::start`], each node with `extra` in its environment too.
    pub async fn start_with(size: u64, extra: &[(&str, &str)]) -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let raft: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let peers: Vec<String> = raft.iter().enumerate().map(|(i, p)| format!("{}=127.0.0.1:{p}", i + 1)).collect();
        let peers = peers.join(",");
        let mut nodes = Vec::new();
        let mut envs = Vec::new();
        for (i, port) in raft.iter().enumerate() {
            let env = vec![
                ("QUEEN_RAFT_NODE_ID".to_string(), (i + 1).to_string()),
                ("QUEEN_RAFT_PEERS".to_string(), peers.clone()),
                ("QUEEN_RAFT_ADDR".to_string(), format!("127.0.0.1:{port}")),
                ("QUEEN_RAFT_TOKEN".to_string(), "cluster-test-token".to_string()),
                ("QUEEN_RAFT_WRITE_TIMEOUT_MS".to_string(), "5000".to_string()),
            ];
            let env = with(&env, extra);
            nodes.push(Some(start(&tmp.path().join(format!("node-{}", i + 1)), &env).await));
            envs.push(env);
        }
        Cluster { nodes, env: envs, tmp }
    }

    /// Node `i`'s data directory.
    pub fn dir(&self, i: usize) -> std::path::PathBuf {
        self.tmp.path().join(format!("node-{}", i + 1))
    }

    /// Starts node `i` again, after it stopped, with its environment and
    /// `extra` (which replaces a variable of the same name).
    pub async fn start_node_with(&mut self, i: usize, extra: &[(&str, &str)]) {
        let env = with(&self.env[i], extra);
        self.nodes[i] = Some(start(&self.dir(i), &env).await);
    }

    /// An HTTP call through node `via`: its status and JSON answer.
    pub async fn call(&self, via: usize, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let node = self.node(via);
        let mut request = node.http.request(method, node.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Adds node `id`, listening for raft on `raft`, as a learner through
    /// node `via`, then promotes it, again while it answers
    /// `learner_behind` (it still copies); answers the membership after.
    pub async fn add_voter(&self, via: usize, id: u64, raft: &str) -> Value {
        let learner = json!({"id": id, "raft": raft, "http": ""});
        let path = "/api/v1/system/raft/membership/learners";
        let (status, answer) = self.call(via, reqwest::Method::POST, path, Some(learner)).await;
        assert_eq!(status, 200, "{answer}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let promote = json!({"ids": [id]});
            let path = "/api/v1/system/raft/membership/promote";
            let (status, answer) = self.call(via, reqwest::Method::POST, path, Some(promote)).await;
            if status == 200 {
                return answer["membership"].clone();
            }
            assert_eq!(answer["code"], "learner_behind", "{answer}");
            assert!(Instant::now() < deadline, "the learner did not catch up: {answer}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The settings of a new node `id`, started empty to join this cluster
    /// (QUEEN_RAFT_JOIN), listed in its own QUEEN_RAFT_PEERS; and its raft address.
    pub fn joiner_env(&self, id: u64) -> (Vec<(String, String)>, String) {
        let raft = format!("127.0.0.1:{}", free_port());
        let mut env = self.env[0].clone();
        for (k, v) in env.iter_mut() {
            match k.as_str() {
                "QUEEN_RAFT_NODE_ID" => *v = id.to_string(),
                "QUEEN_RAFT_PEERS" => *v = format!("{v},{id}={raft}"),
                "QUEEN_RAFT_ADDR" => *v = raft.clone(),
                _ => {}
            }
        }
        env.push(("QUEEN_RAFT_JOIN".into(), "true".into()));
        (env, raft)
    }

    /// Node `i`'s raft address.
    pub fn raft_addr(&self, i: usize) -> String {
        self.env[i].iter().find(|(k, _)| k == "QUEEN_RAFT_ADDR").expect("every node has a raft address").1.clone()
    }

    pub fn node(&self, i: usize) -> &Node {
        self.nodes[i].as_ref().expect("a running node")
    }

    /// The node every running node names as leader, once they agree.
    /// Every running node serves every write of `ledger` in `partitions`
    /// of `queue` at the offset it was acknowledged with, gapless and once
    /// each (waiting up to 20 s for a node to catch up).
    pub async fn check_ledger(&self, ledger: &HashMap<String, (String, u64)>, queue: &str, partitions: &[String]) {
        let deadline = Instant::now() + Duration::from_secs(20);
        for (i, node) in self.nodes.iter().enumerate() {
            let Some(node) = node else { continue };
            for partition in partitions {
                let acked = ledger.values().filter(|(p, _)| p == partition).count();
                let read = loop {
                    let read = node.read_all(queue, partition).await;
                    if read.records.len() >= acked || Instant::now() > deadline {
                        break read;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                };
                let read: Vec<(u64, String)> = read.records.into_iter().map(|(o, t, _)| (o, t)).collect();
                assert_ledger(i + 1, &read, ledger, partition);
            }
        }
    }

    pub async fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut named = Vec::new();
            for node in self.nodes.iter().flatten() {
                let health: Value = node.http.get(node.url("/health")).send().await.unwrap().json().await.unwrap();
                named.push(health["raft"]["leader"].as_u64());
            }
            if let Some(Some(leader)) = named.first().copied() {
                if named.iter().all(|n| *n == Some(leader)) && self.nodes[leader as usize - 1].is_some() {
                    return leader as usize - 1;
                }
            }
            assert!(Instant::now() < deadline, "the nodes did not agree on a leader: {named:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// `env` with `extra` set, each replacing a variable of the same name.
pub fn with(env: &[(String, String)], extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        env.iter().filter(|(k, _)| !extra.iter().any(|(e, _)| e == k)).cloned().collect();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

pub async fn start(dir: &Path, env: &[(String, String)]) -> Node {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Node::start(dir, &env).await
}

/// Pushes one message at a time through `url` until `stop`, retrying each
/// transactionId until it is acknowledged (the retry is safe: dedup).
pub async fn writer(url: String, ledger: Ledger, writer: usize, stop: Arc<std::sync::atomic::AtomicBool>) -> u64 {
    let to = Writer { queue: "cluster".into(), timeout: Duration::from_secs(10), acked_at: Arc::default() };
    to.run(url, ledger, writer, stop).await
}

/// Where and how a [`writer`] pushes: its queue, how long it waits for an
/// answer before it pushes the same transactionId again, and when each of
/// its pushes was acknowledged.
pub struct Writer {
    pub queue: String,
    pub timeout: Duration,
    pub acked_at: Arc<Mutex<Vec<Instant>>>,
}

impl Writer {
    pub async fn run(
        self,
        url: String,
        ledger: Ledger,
        writer: usize,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> u64 {
        let client = reqwest::Client::builder().timeout(self.timeout).build().unwrap();
        let partition = format!("p{writer}");
        let mut refused = 0;
        for seq in 0.. {
            if stop.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            let txid = format!("w{writer}-{seq}");
            let body = push_body(&[(self.queue.clone(), partition.clone(), txid.clone(), json!({"seq": seq}))]);
            loop {
                match client.post(&url).json(&body).send().await {
                    Ok(r) if r.status().as_u16() == 201 => {
                        let answer: Vec<Value> = r.json().await.unwrap();
                        let offset = answer[0]["offset"].as_u64().unwrap();
                        ledger.lock().unwrap().insert(txid, (partition.clone(), offset));
                        self.acked_at.lock().unwrap().push(Instant::now());
                        break;
                    }
                    // A 503 during the election, or no answer from a node
                    // that was killed: the same transactionId again.
                    _ => {
                        refused += 1;
                        if stop.load(std::sync::atomic::Ordering::Acquire) {
                            return refused;
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
        refused
    }
}

/// Node `node`'s `read` of `partition` holds every write of `ledger` in it
/// at the offset it was acknowledged with, gapless, and each once.
pub fn assert_ledger(node: usize, read: &[(u64, String)], ledger: &HashMap<String, (String, u64)>, partition: &str) {
    for (at, (offset, _)) in read.iter().enumerate() {
        assert_eq!(*offset, at as u64, "offsets of {partition} on node {node} have a gap");
    }
    let stored: HashMap<&str, u64> = read.iter().map(|(o, t)| (t.as_str(), *o)).collect();
    assert_eq!(stored.len(), read.len(), "node {node} holds a transactionId of {partition} twice");
    for (txid, (_, offset)) in ledger.iter().filter(|(_, (p, _))| p == partition) {
        assert_eq!(stored.get(txid.as_str()), Some(offset), "node {node} lost acknowledged {txid}");
    }
}
