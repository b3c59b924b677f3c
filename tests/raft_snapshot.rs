//! recovery.md, "A node crashed or restarted": a node away longer than the
//! leader keeps the log for it (QUEEN_RAFT_PURGE_HOLD_S) receives a
//! snapshot, exits with code 75, loads it at its next start, and then
//! serves every acknowledged write by itself. Three real nodes, writes
//! under load the whole time, a ledger checked on every node.

mod common;

use common::cluster::{writer, Cluster, Ledger};
use common::run_until_exit;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn raft(cluster: &Cluster, i: usize) -> Value {
    let node = cluster.node(i);
    let health: Value = node.http.get(node.url("/health")).send().await.unwrap().json().await.unwrap();
    health["raft"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_away_past_the_purge_hold_receives_a_snapshot_exits_75_and_serves_every_write_after_loading_it() {
    let settings = [("QUEEN_RAFT_PURGE_HOLD_S", "2"), ("QUEEN_RAFT_DURABLE_EVERY_MS", "200")];
    let mut cluster = Cluster::start_with(3, &settings).await;
    let leader = cluster.leader().await;
    let away = (leader + 1) % 3;
    let via = (leader + 2) % 3;

    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(writer(cluster.node(via).url("/api/v1/push"), ledger.clone(), via, stop.clone()));
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // The node goes away; the others go on, and purge past where it stopped.
    let left_at = raft(&cluster, away).await["applied"].as_u64().unwrap();
    cluster.nodes[away].as_mut().unwrap().kill9();
    cluster.nodes[away] = None;
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let r = raft(&cluster, leader).await;
        if r["purged"].as_u64().unwrap_or_else(|| panic!("no raft.purged in /health: {r}")) > left_at {
            eprintln!("node {} left at {left_at}; the leader purged through {}", away + 1, r["purged"]);
            break;
        }
        assert!(Instant::now() < deadline, "the leader never purged past {left_at}: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Back, it is sent a snapshot, stages it and exits with code 75.
    let env: Vec<(&str, &str)> = cluster.env[away].iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (code, log) = run_until_exit(&cluster.dir(away), &env, Duration::from_secs(60));
    assert_eq!(code, Some(75), "the node away did not exit to load a snapshot; log:\n{log}");
    assert!(log.contains("received a snapshot from the leader"), "{log}");
    assert!(cluster.dir(away).join("snapshots/staged/MANIFEST").exists(), "no snapshot staged");

    // Started again, it installs it and catches up from the log.
    cluster.start_node_with(away, &[]).await;
    let log = cluster.node(away).log_text();
    assert!(log.contains("installed the staged snapshot"), "{log}");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Release);
    let retried = load.await.unwrap();
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged, {retried} attempts retried", ledger.len());

    // The node that loaded the snapshot serves every write by itself.
    cluster.check_ledger(&ledger, "cluster", &[format!("p{via}")]).await;
}
