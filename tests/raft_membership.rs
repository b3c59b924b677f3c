//! The membership API on a three-node cluster of real processes, and
//! recovery.md's "Replace a node" done through it under load: remove a
//! follower, wipe it, start it empty with QUEEN_RAFT_JOIN, add it as a
//! learner, promote it; then every node, the rebuilt one too, serves every
//! acknowledged write. A removal that would leave too few live voters is
//! refused 409 `no_quorum`. A voter removed while it keeps running, and
//! added back, moves no group's leader, and a node that is no member
//! answers at once.

mod common;

use common::cluster::{start, writer, Cluster, Ledger, Writer};
use common::kafka::{batch, produce, produced, KafkaConn};
use common::Node;
use protocol::messages::ApiKey;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_is_replaced_through_the_membership_api_under_load_and_serves_every_write() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.leader().await;
    let gone = (leader + 1) % 3;
    let healthy = (leader + 2) % 3;
    let id = gone as u64 + 1;

    // The view through a follower is the leader's own.
    let (status, view) = cluster.call(healthy, reqwest::Method::GET, "/api/v1/system/raft/membership", None).await;
    assert_eq!(status, 200, "{view}");
    let m = &view["membership"];
    assert_eq!(m["source"], "leader", "{view}");
    assert_eq!(m["voters"], json!([1, 2, 3]), "{view}");
    assert_eq!(m["leader"].as_u64(), Some(leader as u64 + 1), "{view}");
    assert!(m["members"].as_array().unwrap().iter().all(|x| x["live"] == true), "{view}");

    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(writer(cluster.node(healthy).url("/api/v1/push"), ledger.clone(), 0, stop.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 1. Remove it, through a healthy node.
    let path = format!("/api/v1/system/raft/membership/members/{id}");
    let (status, answer) = cluster.call(healthy, reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(!answer["membership"]["voters"].as_array().unwrap().contains(&json!(id)), "{answer}");

    // 2. Stop it and move its data away; 3. start it empty, joining.
    let mut old = cluster.nodes[gone].take().unwrap();
    old.terminate();
    let dir = cluster.tmp.path().join(format!("node-{id}"));
    std::fs::rename(&dir, dir.with_extension("broken")).unwrap();
    let mut env = cluster.env[gone].clone();
    env.push(("QUEEN_RAFT_JOIN".into(), "true".into()));
    cluster.nodes[gone] = Some(start(&dir, &env).await);
    assert!(cluster.node(gone).log_text().contains("this fresh node joins an existing cluster"));
    // Until it is added it serves nothing, and says so (Kubernetes keeps
    // such a pod NotReady).
    let (status, health) = cluster.call(gone, reqwest::Method::GET, "/health", None).await;
    assert_eq!((status, health["status"].as_str()), (503, Some("joining")), "{health}");

    // 4. Add it as a learner, then promote it (again while it still copies).
    let membership = cluster.add_voter(healthy, id, &cluster.raft_addr(gone)).await;
    assert_eq!(membership["voters"].as_array().unwrap().len(), 3, "{membership}");
    let (status, health) = cluster.call(gone, reqwest::Method::GET, "/health", None).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("healthy")), "{health}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Release);
    let retried = load.await.unwrap();
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged during the replacement, {retried} attempts retried", ledger.len());

    // The rebuilt node, on its own, serves every acknowledged write; and a
    // write through it commits.
    cluster.check_ledger(&ledger, "cluster", &["p0".to_string()]).await;
    let body = common::push_body(&[("cluster".into(), "after".into(), "after-1".into(), json!({}))]);
    let (status, answer) = cluster.node(gone).post("/api/v1/push", &body).await;
    assert_eq!(status, 201, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_removal_that_leaves_too_few_live_voters_is_refused_no_quorum() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.leader().await;
    let down = (leader + 1) % 3;
    let other = (leader + 2) % 3;
    cluster.nodes[down].as_mut().unwrap().kill9();
    cluster.nodes[down] = None;
    // Wait until the leader sees it gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, view) = cluster.call(leader, reqwest::Method::GET, "/api/v1/system/raft/membership", None).await;
        let members = view["membership"]["members"].as_array().cloned().unwrap_or_default();
        if members.iter().any(|m| m["nodeId"] == json!(down as u64 + 1) && m["live"] == false) {
            break;
        }
        assert!(Instant::now() < deadline, "the leader still sees node {} live: {view}", down + 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let path = format!("/api/v1/system/raft/membership/members/{}", other + 1);
    let (status, answer) = cluster.call(leader, reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["code"], "no_quorum", "{answer}");
    assert_eq!(answer["ok"], false, "{answer}");
}

/// Each raft group's (leader, term), once nodes `at` all name the same.
async fn leaders_and_terms(cluster: &Cluster, at: &[usize]) -> Vec<(u64, u64)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut seen = Vec::new();
        for i in at {
            let (_, health) = cluster.call(*i, reqwest::Method::GET, "/health", None).await;
            let groups = health["groups"].as_array().cloned().unwrap_or_default();
            let mine: Option<Vec<(u64, u64)>> =
                groups.iter().map(|g| Some((g["leader"].as_u64()?, g["term"].as_u64()?))).collect();
            seen.push(mine);
        }
        if let Some(Some(first)) = seen.first() {
            if seen.iter().all(|s| s.as_ref() == Some(first)) {
                return first.clone();
            }
        }
        assert!(Instant::now() < deadline, "nodes {at:?} do not agree on the groups' leaders: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How soon a node that is no member answers.
const AT_ONCE: Duration = Duration::from_millis(100);

/// A push through `node`, which is no member, is refused 503
/// `not_a_member` at once.
async fn push_refused_at_once(node: &Node, who: &str) {
    let txid: String = who.chars().filter(char::is_ascii_alphanumeric).collect();
    let body = common::push_body(&[("cluster".into(), "p9".into(), txid, json!({}))]);
    let started = Instant::now();
    let (status, answer) = node.post("/api/v1/push", &body).await;
    let took = started.elapsed();
    let refused = status == 503 && answer["code"] == "not_a_member";
    assert!(refused && took < AT_ONCE, "{who} answered a push {status} {answer} in {took:?}");
}

/// `node`, which is no member, refuses a push, a KV read and a Kafka
/// produce at once, saying so: 503 `not_a_member`, and Kafka's
/// NOT_LEADER_OR_FOLLOWER (6), which clients retry at another broker.
async fn refuses_at_once(node: &Node, who: &str) {
    push_refused_at_once(node, who).await;

    let started = Instant::now();
    let r = node.http.get(node.url("/api/v1/kv/ops/probe")).send().await.unwrap();
    let took = started.elapsed();
    let status = r.status().as_u16();
    let answer: Value = r.json().await.unwrap();
    let refused = status == 503 && answer["code"] == "not_a_member";
    assert!(refused && took < AT_ONCE, "{who} answered a KV read {status} {answer} in {took:?}");

    let mut kafka = KafkaConn::connect(node.kafka_port).await;
    let started = Instant::now();
    let answer = kafka.call(ApiKey::Produce, 9, produce("cluster", 0, batch(-1, -1, -1, &["k".into()]))).await;
    let (took, code) = (started.elapsed(), produced(answer).0);
    assert!(code == 6 && took < AT_ONCE, "{who} answered a Kafka produce with error {code} in {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_voter_removed_while_it_runs_and_added_back_moves_no_leader_and_a_non_member_answers_at_once() {
    // Two raft groups: group 0 prefers node 1 and group 1 node 2 (with
    // three voters and with two), so node 3 leads neither and its removal
    // by itself moves no leader.
    let cluster = Cluster::start_with(3, &[("QUEEN_RAFT_GROUPS", "2")]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let before = loop {
        let leaders = leaders_and_terms(&cluster, &[0, 1, 2]).await;
        if leaders.iter().map(|l| l.0).eq([1, 2]) {
            break leaders;
        }
        assert!(Instant::now() < deadline, "the groups did not settle on nodes 1 and 2: {leaders:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // Node 4, wiped and started to join, waits to be added.
    let (env, _) = cluster.joiner_env(4);
    let joining = start(&cluster.tmp.path().join("node-4"), &env).await;

    // Writers through nodes 1 and 2 throughout.
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let to = Writer { queue: "cluster".into(), timeout: Duration::from_secs(2), acked_at: Arc::default() };
            tokio::spawn(to.run(cluster.node(w).url("/api/v1/push"), ledger.clone(), w, stop.clone()))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let (status, answer) =
        cluster.call(0, reqwest::Method::DELETE, "/api/v1/system/raft/membership/members/3", None).await;
    assert_eq!(status, 200, "{answer}");
    // At once, before it campaigned: it forwards to its leader, which
    // tells it.
    push_refused_at_once(cluster.node(2), "the removed node 3, just removed,").await;

    // It runs on past several election timeouts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    refuses_at_once(cluster.node(2), "the removed node 3").await;
    refuses_at_once(&joining, "the joining node 4").await;
    let (status, health) = cluster.call(2, reqwest::Method::GET, "/health", None).await;
    assert_eq!((status, health["status"].as_str()), (503, Some("removed")), "{health}");
    assert_eq!(leaders_and_terms(&cluster, &[0, 1]).await, before, "the removal moved a leader");

    // Back as a learner, then a voter: no leader steps down for it.
    let membership = cluster.add_voter(0, 3, &cluster.raft_addr(2)).await;
    assert_eq!(membership["voters"], json!([1, 2, 3]), "{membership}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(leaders_and_terms(&cluster, &[0, 1, 2]).await, before, "node 3's return moved a leader");
    let (status, health) = cluster.call(2, reqwest::Method::GET, "/health", None).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("healthy")), "{health}");
    let body = common::push_body(&[("cluster".into(), "p9".into(), "back".into(), json!({}))]);
    let (status, answer) = cluster.node(2).post("/api/v1/push", &body).await;
    assert_eq!(status, 201, "{answer}");

    stop.store(true, Ordering::Release);
    let mut retried = 0;
    for w in writers {
        retried += w.await.unwrap();
    }
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged through the change, {retried} attempts retried", ledger.len());
    cluster.check_ledger(&ledger, "cluster", &["p0".to_string(), "p1".to_string()]).await;
}
