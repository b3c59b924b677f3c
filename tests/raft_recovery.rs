//! recovery.md's procedures that this build supports, rehearsed on real
//! `queen` processes under load: writer tasks push through every node
//! (moving to another node when theirs is down) and keep a ledger of every
//! acknowledged push, and afterwards every node serves every acknowledged
//! write at its offset, gapless and once.
//!
//! - a rolling restart with SIGTERM, leader included;
//! - a token rotation by a rolling restart ("Configuration mistakes");
//! - a majority down with its disks fine (two of three killed -9, then all
//!   three at once);
//! - a voter change whose leader is killed -9 0 to 40 ms into it ("A
//!   membership change stopped half-way").

mod common;

use common::cluster::{start, Cluster, Ledger};
use common::{push_body, Node};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Each node's push URL while it runs, `None` while it is down.
type Targets = Arc<Mutex<Vec<Option<String>>>>;

/// The writers of a rehearsal and what they acknowledged.
struct Load {
    ledger: Ledger,
    stop: Arc<AtomicBool>,
    targets: Targets,
    /// The slowest acknowledged push, retries included, in ms.
    slowest: Arc<Mutex<u128>>,
    tasks: Vec<tokio::task::JoinHandle<u64>>,
    writers: usize,
}

impl Load {
    /// `writers` writers, writer w starting on node w % n.
    fn start(cluster: &Cluster, writers: usize) -> Load {
        let targets: Targets = Arc::new(Mutex::new(Vec::new()));
        let mut load = Load {
            ledger: Arc::default(),
            stop: Arc::default(),
            targets,
            slowest: Arc::default(),
            tasks: Vec::new(),
            writers,
        };
        load.publish(cluster);
        for w in 0..writers {
            load.tasks.push(tokio::spawn(roaming_writer(
                load.targets.clone(),
                load.ledger.clone(),
                w,
                load.stop.clone(),
                load.slowest.clone(),
            )));
        }
        load
    }

    /// The writers go on with the nodes running now.
    fn publish(&self, cluster: &Cluster) {
        let urls = cluster.nodes.iter().map(|n| n.as_ref().map(|n| n.url("/api/v1/push"))).collect();
        *self.targets.lock().unwrap() = urls;
    }

    fn down(&self, i: usize) {
        self.targets.lock().unwrap()[i] = None;
    }

    fn acked(&self) -> usize {
        self.ledger.lock().unwrap().len()
    }

    /// Stops the writers and checks the ledger against every running node.
    async fn finish(self, cluster: &Cluster, what: &str) -> usize {
        self.stop.store(true, Ordering::Release);
        let mut retried = 0;
        for t in self.tasks {
            retried += t.await.unwrap();
        }
        let ledger = self.ledger.lock().unwrap().clone();
        let slowest = *self.slowest.lock().unwrap();
        eprintln!("{what}: {} pushes acknowledged, {retried} attempts retried, slowest {slowest} ms", ledger.len());
        let partitions: Vec<String> = (0..self.writers).map(|w| format!("p{w}")).collect();
        cluster.check_ledger(&ledger, "cluster", &partitions).await;
        ledger.len()
    }
}

/// Pushes one message at a time until `stop`, retrying each transactionId
/// until it is acknowledged (dedup makes the retry safe), through the node
/// it last reached and, when that fails, through the next running one.
async fn roaming_writer(
    targets: Targets,
    ledger: Ledger,
    writer: usize,
    stop: Arc<AtomicBool>,
    slowest: Arc<Mutex<u128>>,
) -> u64 {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let partition = format!("p{writer}");
    let mut at = writer;
    let mut refused = 0;
    for seq in 0.. {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let txid = format!("w{writer}-{seq}");
        let body = push_body(&[("cluster".into(), partition.clone(), txid.clone(), json!({"seq": seq}))]);
        let started = Instant::now();
        loop {
            let url = {
                let targets = targets.lock().unwrap();
                let n = targets.len();
                (0..n).map(|k| (at + k) % n).find_map(|i| targets[i].clone().map(|u| (i, u)))
            };
            let answered = match &url {
                Some((i, url)) => {
                    at = *i;
                    client.post(url).json(&body).send().await.ok()
                }
                None => None,
            };
            match answered {
                Some(r) if r.status().as_u16() == 201 => {
                    let answer: Vec<Value> = r.json().await.unwrap();
                    let offset = answer[0]["offset"].as_u64().unwrap();
                    ledger.lock().unwrap().insert(txid, (partition.clone(), offset));
                    let took = started.elapsed().as_millis();
                    let mut s = slowest.lock().unwrap();
                    *s = (*s).max(took);
                    break;
                }
                // A 503 (no leader, no commit within the timeout) or no
                // answer from a node that is down: the same transactionId
                // again, through the next node.
                _ => {
                    refused += 1;
                    at += 1;
                    if stop.load(Ordering::Acquire) {
                        return refused;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    refused
}

/// recovery.md's probe: a KV write that expires after a minute. True when
/// it committed through node `via` within `within`.
async fn probe(node: &Node, within: Duration) -> bool {
    let body = json!({"value": format!("{:?}", Instant::now()), "ttlSeconds": 60});
    let request = node.http.put(node.url("/api/v1/kv/ops/probe")).json(&body).timeout(within);
    matches!(request.send().await, Ok(r) if r.status().is_success())
}

/// Waits until a probe commits through node `via`; answers how long it took.
async fn commits(cluster: &Cluster, via: usize) -> Duration {
    let started = Instant::now();
    while !probe(cluster.node(via), Duration::from_secs(10)).await {
        assert!(started.elapsed() < Duration::from_secs(40), "node {} does not commit", via + 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

async fn health(node: &Node) -> Value {
    node.http.get(node.url("/health")).send().await.unwrap().json().await.unwrap()
}

/// Waits until `needle` shows in the log of node `i`.
async fn logged(node: &Node, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !node.log_text().contains(needle) {
        assert!(Instant::now() < deadline, "no {needle:?} in the log:\n{}", node.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_with_sigterm_leader_included_loses_no_acknowledged_write() {
    let mut cluster = Cluster::start(3).await;
    cluster.leader().await;
    let load = Load::start(&cluster, 2);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut leaders_stopped = 0;
    for i in 0..3 {
        let before = load.acked();
        let led = health(cluster.node(i)).await["raft"]["role"] == "leader";
        load.down(i);
        let mut node = cluster.nodes[i].take().unwrap();
        node.terminate();
        if led {
            leaders_stopped += 1;
            assert!(node.log_text().contains("handed leadership over before stopping"), "{}", node.log_text());
        }
        cluster.nodes[i] = Some(node.restart().await);
        load.publish(&cluster);
        // The restarted node answers /health (Node::restart waits for its
        // 200); before the next one, the cluster commits through it.
        let took = commits(&cluster, i).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        eprintln!(
            "node {} restarted{}: a probe through it committed after {took:?}; {} pushes acknowledged meanwhile",
            i + 1,
            if led { " (it led)" } else { "" },
            load.acked() - before
        );
    }
    assert!(leaders_stopped >= 1, "a leader was among the nodes stopped");
    cluster.leader().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    load.finish(&cluster, "rolling restart").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_rotation_by_a_rolling_restart_loses_no_acknowledged_write() {
    let mut cluster = Cluster::start(3).await;
    cluster.leader().await;
    let load = Load::start(&cluster, 2);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rotated = "rotated-cluster-token";
    for i in 0..3 {
        load.down(i);
        let mut node = cluster.nodes[i].take().unwrap();
        node.terminate();
        drop(node);
        cluster.start_node_with(i, &[("QUEEN_RAFT_TOKEN", rotated)]).await;
        load.publish(&cluster);
        match i {
            // One node has the new token: the two others refuse it, and it
            // is refused, while they go on committing without it.
            0 => {
                logged(cluster.node(0), "a peer refused this node's QUEEN_RAFT_TOKEN").await;
                logged(cluster.node(1), "refused node 1's QUEEN_RAFT_TOKEN: it differs from this node's").await;
                logged(cluster.node(2), "refused node 1's QUEEN_RAFT_TOKEN: it differs from this node's").await;
                let took = commits(&cluster, 1).await;
                eprintln!("one node rotated: the two others commit (probe {took:?})");
            }
            // Two have it: they commit together, and the one with the old
            // token is refused.
            1 => {
                let took = commits(&cluster, 1).await;
                eprintln!("two nodes rotated: a probe through node 2 committed after {took:?}");
                logged(cluster.node(1), "refused node 3's QUEEN_RAFT_TOKEN: it differs from this node's").await;
                logged(cluster.node(2), "a peer refused this node's QUEEN_RAFT_TOKEN").await;
            }
            _ => {
                let took = commits(&cluster, 2).await;
                eprintln!("all rotated: a probe through node 3 committed after {took:?}");
            }
        }
    }
    cluster.leader().await;
    for i in 0..3 {
        commits(&cluster, i).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    load.finish(&cluster, "token rotation").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_majority_down_with_its_disks_fine_comes_back_and_loses_no_acknowledged_write() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.leader().await;
    let follower = (leader + 1) % 3;
    let survivor = (leader + 2) % 3;
    let load = Load::start(&cluster, 2);
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // The leader and a follower are killed -9.
    let mut down = Vec::new();
    for i in [leader, follower] {
        load.down(i);
        let mut node = cluster.nodes[i].take().unwrap();
        node.kill9();
        down.push((i, node));
    }
    // A write through the survivor does not commit: 503 within the write
    // timeout (5 s here), while its /health still answers 200.
    let started = Instant::now();
    let body = push_body(&[("cluster".into(), "alone".into(), "alone-1".into(), json!({}))]);
    let (status, answer) = cluster.node(survivor).post("/api/v1/push", &body).await;
    let took = started.elapsed();
    assert_eq!(status, 503, "a write without a majority answered {answer}");
    assert!(took < Duration::from_secs(8), "the 503 came after {took:?}");
    let r = cluster.node(survivor).http.get(cluster.node(survivor).url("/health")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let stalled = load.acked();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(load.acked(), stalled, "nothing commits while the majority is down");
    eprintln!("majority down: a write through node {} answered 503 {} after {took:?}", survivor + 1, answer["code"]);

    // Bring them back on their directories: writes commit again once the
    // first is back.
    let (first, node) = down.remove(0);
    let back = Instant::now();
    cluster.nodes[first] = Some(node.restart().await);
    load.publish(&cluster);
    let took = commits(&cluster, survivor).await;
    eprintln!("node {} back: a probe committed {:?} after its restart began", first + 1, back.elapsed());
    assert!(took < Duration::from_secs(15));
    let (second, node) = down.remove(0);
    cluster.nodes[second] = Some(node.restart().await);
    load.publish(&cluster);
    commits(&cluster, second).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(load.acked() > stalled, "writes committed again");

    // All three killed at the same instant, and started again.
    let before = load.acked();
    for i in 0..3 {
        load.down(i);
        cluster.nodes[i].as_mut().unwrap().kill9();
    }
    let back = Instant::now();
    for i in 0..3 {
        let node = cluster.nodes[i].take().unwrap();
        cluster.nodes[i] = Some(node.restart().await);
    }
    load.publish(&cluster);
    cluster.leader().await;
    commits(&cluster, 0).await;
    eprintln!("all three killed and restarted: committing again after {:?}", back.elapsed());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(load.acked() > before, "writes committed after all three restarted");
    load.finish(&cluster, "majority down").await;
}

async fn call(node: &Node, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = node.http.request(method, node.url(path)).timeout(Duration::from_secs(15));
    if let Some(body) = body {
        request = request.json(&body);
    }
    match request.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        }
        // The node was killed while it answered.
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

const MEMBERSHIP: &str = "/api/v1/system/raft/membership";

/// The leader's own membership view, asked through node `via`.
async fn leader_view(node: &Node) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, view) = call(node, reqwest::Method::GET, MEMBERSHIP, None).await;
        if status == 200 && view["membership"]["source"] == "leader" {
            return view["membership"].clone();
        }
        assert!(Instant::now() < deadline, "no leader's view through this node: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The node every running node names as leader, once they agree, where
/// node 4 may lead while it waits `aside` (out of the cluster's nodes).
async fn leader_with(cluster: &Cluster, aside: Option<&Node>) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut named = Vec::new();
        for node in cluster.nodes.iter().flatten() {
            named.push(health(node).await["raft"]["leader"].as_u64());
        }
        if let Some(Some(leader)) = named.first().copied() {
            let running = cluster.nodes[leader as usize - 1].is_some() || (leader == 4 && aside.is_some());
            if running && named.iter().all(|n| *n == Some(leader)) {
                return leader;
            }
        }
        assert!(Instant::now() < deadline, "the nodes did not agree on a leader: {named:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// recovery.md's "Replace a node", steps 2 to 4 without the promotion:
/// node 4 starts on an empty directory with QUEEN_RAFT_JOIN, is added as a
/// learner through node `via`, and copies until it may be promoted.
/// A learner already is only waited for.
async fn add_learner(cluster: &mut Cluster, via: usize, env: &[(String, String)], learner: &Value) {
    let view = leader_view(cluster.node(via)).await;
    if !view["members"].as_array().unwrap().iter().any(|m| m["nodeId"] == 4) {
        assert!(cluster.nodes[3].is_none(), "node 4 runs while it is no member");
        let dir = cluster.tmp.path().join("node-4");
        let _ = std::fs::remove_dir_all(&dir);
        cluster.nodes[3] = Some(start(&dir, env).await);
        let path = format!("{MEMBERSHIP}/learners");
        let (status, answer) = call(cluster.node(via), reqwest::Method::POST, &path, Some(learner.clone())).await;
        assert_eq!(status, 200, "{answer}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view = leader_view(cluster.node(via)).await;
        let four = view["members"].as_array().unwrap().iter().find(|m| m["nodeId"] == 4).cloned();
        if four.is_some_and(|m| m["live"] == true && m["lag"].as_u64().is_some_and(|l| l < 100)) {
            return;
        }
        assert!(Instant::now() < deadline, "node 4 does not catch up: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_voter_change_whose_leader_is_killed_mid_way_completes_or_finishes_with_the_named_command() {
    let mut cluster = Cluster::start(3).await;
    cluster.leader().await;

    // Node 4, joining, listed in its own QUEEN_RAFT_PEERS.
    let (env, raft4) = cluster.joiner_env(4);
    cluster.env.push(env.clone());
    cluster.nodes.push(None);
    let learner = json!({"id": 4, "raft": raft4, "http": ""});

    let load = Load::start(&cluster, 2);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut outcomes = Vec::new();
    for attempt in 0..5u64 {
        let leader = cluster.leader().await;
        let other = (0..3).find(|i| *i != leader).unwrap();
        let view = leader_view(cluster.node(other)).await;
        let voters = ids(&view["voters"]);
        assert!(view["joint"].as_array().unwrap().is_empty(), "{view}");
        // Add node 4 as a voter, or take it out again: both are two-step
        // voter changes. Taken out, node 4 was stopped and wiped (rule 2);
        // it comes back empty, as a learner, before its promotion.
        let (method, path, body, target) = if voters.contains(&4) {
            (reqwest::Method::PUT, format!("{MEMBERSHIP}/voters"), json!({"voters": [1, 2, 3]}), vec![1, 2, 3])
        } else {
            add_learner(&mut cluster, other, &env, &learner).await;
            load.publish(&cluster);
            (reqwest::Method::POST, format!("{MEMBERSHIP}/promote"), json!({"ids": [4]}), vec![1, 2, 3, 4])
        };

        // The change through the leader, and the leader killed -9 0 to 40
        // ms into it.
        let delay = Duration::from_millis(attempt * 10);
        let url = cluster.node(leader).url(&path);
        let http = cluster.node(leader).http.clone();
        let change = tokio::spawn(async move {
            let r = http.request(method, url).json(&body).timeout(Duration::from_secs(15)).send().await;
            r.map_or(0, |r| r.status().as_u16())
        });
        tokio::time::sleep(delay).await;
        load.down(leader);
        let mut killed = cluster.nodes[leader].take().unwrap();
        killed.kill9();
        let answered = change.await.unwrap();
        // Being taken out, node 4 may never hear of the next leader (a
        // leader sends nothing to a node its newest config leaves out): it
        // waits aside until the membership says whether it is still in.
        let mut aside = None;
        if target.len() == 3 && leader != 3 {
            load.down(3);
            aside = cluster.nodes[3].take();
        }

        // A new leader among the others. As recovery.md says, start with a
        // write: once it commits, the new leader's term has committed too,
        // and with it whatever of the change reached it.
        let survivor = (0..3).find(|i| cluster.nodes[*i].is_some()).unwrap();
        leader_with(&cluster, aside.as_ref()).await;
        commits(&cluster, survivor).await;
        let view = leader_view(cluster.node(survivor)).await;
        let outcome = if !view["joint"].as_array().unwrap().is_empty() {
            // Half made: every other change answers 409 in_flight with the
            // command that finishes it, and that command, run as given,
            // finishes it.
            let promote = Some(json!({"ids": [4]}));
            let path = format!("{MEMBERSHIP}/promote");
            let (status, refusal) = call(cluster.node(survivor), reqwest::Method::POST, &path, promote).await;
            assert_eq!((status, refusal["code"].as_str()), (409, Some("in_flight")), "{refusal}");
            let error = refusal["error"].as_str().unwrap();
            let command = error.split("finish it first with ").nth(1).expect("the finishing command");
            let (path, body) = command.strip_prefix("PUT ").expect("a PUT").split_once(' ').unwrap();
            let body: Value = serde_json::from_str(body).unwrap();
            let (status, answer) = call(cluster.node(survivor), reqwest::Method::PUT, path, Some(body.clone())).await;
            assert_eq!(status, 200, "the finishing command answered {answer}");
            assert!(answer["membership"]["joint"].as_array().unwrap().is_empty(), "{answer}");
            assert_eq!(ids(&answer["membership"]["voters"]), ids(&body["voters"]), "{answer}");
            "joint, finished by the named command"
        } else if ids(&view["voters"]) == target {
            "completed"
        } else {
            // The kill came before the change reached any survivor: it was
            // not acknowledged.
            assert_ne!(answered, 200, "an acknowledged change was lost: {view}");
            assert_eq!(ids(&view["voters"]), voters, "{view}");
            "not made (the leader died first)"
        };
        eprintln!(
            "attempt {attempt}: leader node {} killed {delay:?} into the change to {target:?} (answered {answered}): {outcome}",
            leader + 1
        );
        outcomes.push(outcome);

        // The killed node comes back. Node 4, when it is no member any
        // more, is stopped and wiped instead.
        let view = leader_view(cluster.node(survivor)).await;
        let member4 = view["members"].as_array().unwrap().iter().any(|m| m["nodeId"] == 4);
        if leader == 3 && !member4 {
            drop(killed);
        } else {
            cluster.nodes[leader] = Some(killed.restart().await);
        }
        if let Some(node) = aside {
            cluster.nodes[3] = Some(node);
        }
        if !member4 {
            if let Some(mut node) = cluster.nodes[3].take() {
                node.terminate();
            }
        }
        load.publish(&cluster);
        let leader = cluster.leader().await;
        commits(&cluster, leader).await;
    }

    // End with node 4 a voter, so that all four serve the ledger.
    let leader = cluster.leader().await;
    let view = leader_view(cluster.node(leader)).await;
    if !ids(&view["voters"]).contains(&4) {
        add_learner(&mut cluster, leader, &env, &learner).await;
        load.publish(&cluster);
        let path = format!("{MEMBERSHIP}/promote");
        let (status, answer) =
            call(cluster.node(leader), reqwest::Method::POST, &path, Some(json!({"ids": [4]}))).await;
        assert_eq!(status, 200, "{answer}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    eprintln!("outcomes: {outcomes:?}");
    load.finish(&cluster, "membership change stopped half-way").await;
}
