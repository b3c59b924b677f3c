//! The membership API on a three-node cluster of real processes, and
//! recovery.md's "Replace a node" done through it under load: remove a
//! follower, wipe it, start it empty with QUEEN_RAFT_JOIN, add it as a
//! learner, promote it; then every node, the rebuilt one too, serves every
//! acknowledged write. A removal that would leave too few live voters is
//! refused 409 `no_quorum`.

mod common;

use common::cluster::{start, writer, Cluster, Ledger};
use serde_json::json;
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
