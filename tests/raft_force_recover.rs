//! recovery.md, "A majority of the disks is gone for good", rehearsed on
//! three real nodes: after writes under load, two nodes lose their disks
//! (the leader's among them); the survivor, restarted with
//! QUEEN_RAFT_FORCE_RECOVER naming it, leads alone and serves every
//! acknowledged write; started with the variable still set it refuses to
//! boot, and so does a rebuilt node whose variable names another; the two
//! are rebuilt empty, join as learners and are promoted; writes go on, and
//! every node serves the whole ledger.

mod common;

use common::cluster::{with, writer, Cluster, Ledger};
use common::expect_refusal;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MEMBERSHIP: &str = "/api/v1/system/raft/membership";

/// Writes through `via` for `for_ms`, into `ledger`, as writer `id`.
async fn load(cluster: &Cluster, via: usize, ledger: &Ledger, id: usize, for_ms: u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(writer(cluster.node(via).url("/api/v1/push"), ledger.clone(), id, stop.clone()));
    tokio::time::sleep(Duration::from_millis(for_ms)).await;
    stop.store(true, Ordering::Release);
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_one_survivor_of_two_lost_disks_leads_alone_after_a_forced_recovery_and_the_rebuilt_nodes_join_it() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.leader().await;
    let survivor = (leader + 1) % 3;
    let lost: Vec<usize> = (0..3).filter(|i| *i != survivor).collect();
    let ledger: Ledger = Arc::default();
    load(&cluster, survivor, &ledger, 0, 1500).await;
    // The survivor holds everything committed before the disaster (it is
    // current, as in the rehearsal; a survivor behind would lose the rest).
    let acked = ledger.lock().unwrap().clone();
    cluster.check_ledger(&acked, "cluster", &["p0".into()]).await;

    // The disaster: every node stops, two disks are gone for good.
    for i in 0..3 {
        cluster.nodes[i].as_mut().unwrap().kill9();
    }
    for &i in &lost {
        cluster.nodes[i] = None;
        std::fs::remove_dir_all(cluster.dir(i)).unwrap();
    }

    // 1. The survivor, with the variable naming it, leads alone.
    let me = (survivor + 1).to_string();
    cluster.start_node_with(survivor, &[("QUEEN_RAFT_FORCE_RECOVER", &me)]).await;
    let log = cluster.node(survivor).log_text();
    assert!(
        log.contains("QUEEN_RAFT_FORCE_RECOVER: UNSAFE RECOVERY. This node makes itself the ONLY voter"),
        "no UNSAFE RECOVERY line; log:\n{log}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let view = loop {
        let (_, view) = cluster.call(survivor, reqwest::Method::GET, MEMBERSHIP, None).await;
        if view["membership"]["leader"].as_u64() == Some(survivor as u64 + 1) {
            break view;
        }
        assert!(Instant::now() < deadline, "the survivor does not lead alone: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(view["membership"]["voters"], json!([survivor + 1]), "{view}");
    load(&cluster, survivor, &ledger, 0, 500).await;
    let acked = ledger.lock().unwrap().clone();
    cluster.check_ledger(&acked, "cluster", &["p0".into()]).await;

    // 2. Started again with the variable still set, it refuses; without it, it boots.
    cluster.nodes[survivor].as_mut().unwrap().terminate();
    let env = with(&cluster.env[survivor], &[("QUEEN_RAFT_FORCE_RECOVER", &me)]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let refusal = expect_refusal(&cluster.dir(survivor), &env);
    let line = format!("QUEEN_RAFT_FORCE_RECOVER={me} is still set, but this node already recovered");
    assert!(refusal.contains(&line), "{refusal}");
    cluster.start_node_with(survivor, &[]).await;

    // A rebuilt node started with the variable still in its environment
    // names another node, and refuses.
    let other = lost[0];
    let env = with(&cluster.env[other], &[("QUEEN_RAFT_FORCE_RECOVER", &me), ("QUEEN_RAFT_JOIN", "true")]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let refusal = expect_refusal(&cluster.dir(other), &env);
    let line = format!("QUEEN_RAFT_FORCE_RECOVER={me}, but this node is {}", other + 1);
    assert!(refusal.contains(&line), "{refusal}");
    let _ = std::fs::remove_dir_all(cluster.dir(other));

    // 3. The others, rebuilt empty, join and are promoted, under load.
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(writer(cluster.node(survivor).url("/api/v1/push"), ledger.clone(), 0, stop.clone()));
    for &i in &lost {
        cluster.start_node_with(i, &[("QUEEN_RAFT_JOIN", "true")]).await;
        let membership = cluster.add_voter(survivor, i as u64 + 1, &cluster.raft_addr(i)).await;
        assert!(membership["voters"].as_array().unwrap().contains(&json!(i + 1)), "{membership}");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Release);
    let retried = task.await.unwrap();
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged across the recovery, {retried} attempts retried", ledger.len());

    let (_, view) = cluster.call(lost[1], reqwest::Method::GET, MEMBERSHIP, None).await;
    assert_eq!(view["membership"]["voters"], json!([1, 2, 3]), "{view}");
    cluster.check_ledger(&ledger, "cluster", &["p0".into()]).await;
    let body = common::push_body(&[("cluster".into(), "after".into(), "after-1".into(), Value::Null)]);
    let (status, answer) = cluster.node(lost[0]).post("/api/v1/push", &body).await;
    assert_eq!(status, 201, "a write through a rebuilt node: {answer}");
}
