//! A three-node cluster of real `queen` processes on loopback: writes go
//! through every node (a follower forwards to the leader), the leader is
//! killed with SIGKILL under load and a new one takes over, and afterwards
//! every node serves every acknowledged write at the offset it was
//! acknowledged with, with no gap and nothing twice; a retry of an
//! acknowledged transactionId answers its original offset.

mod common;

use common::{free_port, push_body, Node};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// transactionId → (partition, offset), for every acknowledged push.
type Ledger = Arc<Mutex<HashMap<String, (String, u64)>>>;

struct Cluster {
    nodes: Vec<Option<Node>>,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    async fn start(size: u64) -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let raft: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let peers: Vec<String> = raft.iter().enumerate().map(|(i, p)| format!("{}=127.0.0.1:{p}", i + 1)).collect();
        let peers = peers.join(",");
        let mut nodes = Vec::new();
        for (i, port) in raft.iter().enumerate() {
            let env = vec![
                ("QUEEN_RAFT_NODE_ID".to_string(), (i + 1).to_string()),
                ("QUEEN_RAFT_PEERS".to_string(), peers.clone()),
                ("QUEEN_RAFT_ADDR".to_string(), format!("127.0.0.1:{port}")),
                ("QUEEN_RAFT_TOKEN".to_string(), "cluster-test-token".to_string()),
                ("QUEEN_RAFT_WRITE_TIMEOUT_MS".to_string(), "5000".to_string()),
            ];
            nodes.push(Some(start(&tmp.path().join(format!("node-{}", i + 1)), &env).await));
        }
        Cluster { nodes, _tmp: tmp }
    }

    fn node(&self, i: usize) -> &Node {
        self.nodes[i].as_ref().expect("a running node")
    }

    /// The node every running node names as leader, once they agree.
    async fn leader(&self) -> usize {
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

async fn start(dir: &Path, env: &[(String, String)]) -> Node {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Node::start(dir, &env).await
}

/// Pushes one message at a time through `url` until `stop`, retrying each
/// transactionId until it is acknowledged (the retry is safe: dedup).
async fn writer(url: String, ledger: Ledger, writer: usize, stop: Arc<std::sync::atomic::AtomicBool>) -> u64 {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let partition = format!("p{writer}");
    let mut refused = 0;
    for seq in 0.. {
        if stop.load(std::sync::atomic::Ordering::Acquire) {
            break;
        }
        let txid = format!("w{writer}-{seq}");
        let body = push_body(&[("cluster".into(), partition.clone(), txid.clone(), json!({"seq": seq}))]);
        loop {
            match client.post(&url).json(&body).send().await {
                Ok(r) if r.status().as_u16() == 201 => {
                    let answer: Vec<Value> = r.json().await.unwrap();
                    let offset = answer[0]["offset"].as_u64().unwrap();
                    ledger.lock().unwrap().insert(txid, (partition.clone(), offset));
                    break;
                }
                // A 503 during the election, or no answer from a node that
                // was killed: the same transactionId again.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_keep_every_acknowledged_write_through_a_leader_killed_under_load() {
    let mut cluster = Cluster::start(3).await;
    let first = cluster.leader().await;

    // A write through each node, follower or leader, commits.
    for i in 0..3 {
        let (status, body) = cluster
            .node(i)
            .post("/api/v1/push", &push_body(&[("cluster".into(), "warm".into(), format!("warm-{i}"), json!({}))]))
            .await;
        assert_eq!(status, 201, "a push through node {} answered {body}", i + 1);
    }

    // One writer per follower keeps writing while the leader is killed.
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let followers: Vec<usize> = (0..3).filter(|i| *i != first).collect();
    let writers: Vec<_> = followers
        .iter()
        .map(|&i| tokio::spawn(writer(cluster.node(i).url("/api/v1/push"), ledger.clone(), i, stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before_kill = ledger.lock().unwrap().len();
    cluster.nodes[first].as_mut().unwrap().kill9();
    let killed = cluster.nodes[first].take().unwrap();
    let second = cluster.leader().await;
    assert_ne!(second, first, "a new leader took over");
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // The killed node comes back on its own directory and catches up.
    cluster.nodes[first] = Some(killed.restart().await);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let mut retried = 0;
    for w in writers {
        retried += w.await.unwrap();
    }
    let ledger = ledger.lock().unwrap().clone();
    eprintln!(
        "node {} led, then node {}: {} pushes acknowledged ({before_kill} before the kill), {retried} attempts retried",
        first + 1,
        second + 1,
        ledger.len()
    );
    assert!(
        ledger.len() > before_kill,
        "writes committed after the leader was killed ({before_kill} before, {} in all)",
        ledger.len()
    );

    // Every node, the restarted one too, serves every acknowledged write.
    let deadline = Instant::now() + Duration::from_secs(20);
    for i in 0..3 {
        for &w in &followers {
            let partition = format!("p{w}");
            let read = loop {
                let read = cluster.node(i).read_all("cluster", &partition).await;
                let acked = ledger.values().filter(|(p, _)| *p == partition).count();
                if read.records.len() >= acked || Instant::now() > deadline {
                    break read;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            let stored: HashMap<&str, u64> = read.records.iter().map(|(o, t, _)| (t.as_str(), *o)).collect();
            assert_eq!(stored.len(), read.records.len(), "node {} holds a transactionId of {partition} twice", i + 1);
            for (at, (offset, _, _)) in read.records.iter().enumerate() {
                assert_eq!(*offset, at as u64, "offsets of {partition} on node {} have a gap", i + 1);
            }
            for (txid, (_, offset)) in ledger.iter().filter(|(_, (p, _))| *p == partition) {
                assert_eq!(stored.get(txid.as_str()), Some(offset), "node {} lost acknowledged {txid}", i + 1);
            }
        }
    }

    // A retry of an acknowledged write answers its original offset.
    let (txid, (partition, offset)) = ledger.iter().next().unwrap();
    let body = push_body(&[("cluster".into(), partition.clone(), txid.clone(), json!({}))]);
    let (status, answer) = cluster.node(second).post("/api/v1/push", &body).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer[0]["offset"].as_u64(), Some(*offset), "the retry of {txid} answered {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_through_a_leader_cut_off_from_the_majority_answers_503_timeout_within_its_timeout() {
    let mut cluster = Cluster::start(3).await;
    // The leader loses both followers: it still takes the write, which
    // cannot commit, and answers 503 `timeout` once QUEEN_RAFT_WRITE_TIMEOUT_MS
    // (5 s in these tests) has passed.
    let leader = cluster.leader().await;
    for i in (0..3).filter(|i| *i != leader) {
        cluster.nodes[i].as_mut().unwrap().kill9();
        cluster.nodes[i] = None;
    }
    let started = Instant::now();
    let body = push_body(&[("cluster".into(), "alone".into(), "alone-1".into(), json!({}))]);
    let (status, answer) = cluster.node(leader).post("/api/v1/push", &body).await;
    let took = started.elapsed();
    assert_eq!(status, 503, "a write without a majority answered {answer}");
    assert_eq!(answer["code"], "timeout", "{answer}");
    assert!(took >= Duration::from_secs(4) && took < Duration::from_secs(8), "the 503 came after {took:?}");
    eprintln!("a write through a leader without a majority answered 503 {} after {took:?}", answer["code"]);
}
