//! Several raft groups per node (`QUEEN_RAFT_GROUPS`): three real nodes
//! founded with four groups share one raft port per node, every group
//! elects, leadership spreads so that each node leads a group, a kill -9
//! re-elects only the groups the killed node led while the others keep
//! their leaders and terms, HTTP and Kafka writes (all in group 0 while no
//! partition is placed in another group) go on, and the node back
//! takes its preferred group again; a SIGTERM hands over the groups a
//! node leads.

mod common;

use common::cluster::{writer, Cluster, Ledger};
use common::kafka::idempotent_writer;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GROUPS: usize = 4;

/// Each group's (leader, term), as every running node sees it, once they
/// all agree; `None` while they do not.
async fn group_leaders(cluster: &Cluster) -> Option<Vec<(u64, u64)>> {
    let mut seen: Option<Vec<(u64, u64)>> = None;
    for node in cluster.nodes.iter().flatten() {
        let health: Value = node.http.get(node.url("/health")).send().await.ok()?.json().await.ok()?;
        let groups = health["groups"].as_array()?;
        let mine: Vec<(u64, u64)> =
            groups.iter().map(|g| Some((g["leader"].as_u64()?, g["term"].as_u64()?))).collect::<Option<_>>()?;
        if mine.len() != GROUPS || seen.as_ref().is_some_and(|s| *s != mine) {
            return None;
        }
        seen = Some(mine);
    }
    seen
}

/// Waits until the running nodes agree on every group's leader and `done`
/// holds of the leaders.
async fn leaders_when(cluster: &Cluster, within: Duration, done: impl Fn(&[(u64, u64)]) -> bool) -> Vec<(u64, u64)> {
    let deadline = Instant::now() + within;
    loop {
        let leaders = group_leaders(cluster).await;
        if let Some(leaders) = leaders.as_ref().filter(|l| done(l)) {
            return leaders.clone();
        }
        assert!(Instant::now() < deadline, "the groups did not settle as wanted: {leaders:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_groups_on_three_nodes_spread_their_leaders_and_a_kill_stalls_only_the_killed_nodes_groups() {
    let mut cluster = Cluster::start_with(3, &[("QUEEN_RAFT_GROUPS", "4")]).await;
    for i in 0..3 {
        let groups_dir = cluster.dir(i).join("groups");
        for g in 1..GROUPS {
            assert!(groups_dir.join(format!("g{g}/qlog/GROUPS")).exists(), "node {} has group {g}'s layout", i + 1);
        }
    }

    // Group g prefers node g % 3 + 1: each node leads a group.
    let preferred = |leaders: &[(u64, u64)]| leaders.iter().map(|l| l.0).collect::<Vec<_>>() == [1, 2, 3, 1];
    let before = leaders_when(&cluster, Duration::from_secs(60), preferred).await;

    let (status, membership) = cluster.call(0, reqwest::Method::GET, "/api/v1/system/raft/membership", None).await;
    assert_eq!(status, 200, "{membership}");
    let shown: Vec<(u64, u64)> = membership["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["group"].as_u64().unwrap(), g["membership"]["leader"].as_u64().unwrap()))
        .collect();
    assert_eq!(shown, vec![(0, 1), (1, 2), (2, 3), (3, 1)], "{membership}");
    let (status, refused) = cluster
        .call(
            0,
            reqwest::Method::PUT,
            "/api/v1/system/raft/membership/voters",
            Some(serde_json::json!({"voters": [1, 2]})),
        )
        .await;
    assert_eq!((status, refused["code"].as_str()), (501, Some("unsupported")), "{refused}");

    // HTTP writers through node 1 (group 0's leader), and an idempotent
    // Kafka producer through nodes 1 and 2, go on through node 3's kill.
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let url = cluster.node(0).url("/api/v1/push");
    let writers: Vec<_> = (0..2).map(|w| tokio::spawn(writer(url.clone(), ledger.clone(), w, stop.clone()))).collect();
    let kafka_ledger: Ledger = Arc::default();
    let brokers = (0..2).map(|i| ("127.0.0.1".to_string(), cluster.node(i).kafka_port)).collect();
    let kafka = tokio::spawn(idempotent_writer(brokers, "kgroups", kafka_ledger.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;

    cluster.nodes[2].take().unwrap().kill9();
    let killed_at = Instant::now();
    let after = leaders_when(&cluster, Duration::from_secs(20), |l| l[2].0 != 3).await;
    let stalled = killed_at.elapsed();
    for g in [0, 1, 3] {
        assert_eq!(after[g], before[g], "group {g}, not led by the killed node, kept its leader and term");
    }
    assert!(after[2].1 > before[2].1, "group 2 elected a new leader in a later term: {after:?}");
    assert!(stalled < Duration::from_secs(5), "group 2 went {stalled:?} without a leader");
    println!("group 2 re-elected {stalled:?} after its leader's kill -9");

    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Release);
    for w in writers {
        w.await.unwrap();
    }
    kafka.await.unwrap();
    let ledger = ledger.lock().unwrap().clone();
    assert!(ledger.len() > 20, "the writers were answered: {}", ledger.len());
    cluster.check_ledger(&ledger, "cluster", &["p0".into(), "p1".into()]).await;
    let kafka_ledger = kafka_ledger.lock().unwrap().clone();
    assert!(kafka_ledger.len() > 20, "the Kafka producer was answered: {}", kafka_ledger.len());
    cluster.check_ledger(&kafka_ledger, "kgroups", &["0".into()]).await;

    // Back, node 3 catches up and is handed its preferred group again.
    cluster.start_node_with(2, &[]).await;
    let back = leaders_when(&cluster, Duration::from_secs(60), preferred).await;
    let terms: BTreeMap<usize, u64> = back.iter().map(|l| l.1).enumerate().collect();
    println!("leaders back where preferred, terms {terms:?}");
    cluster.check_ledger(&ledger, "cluster", &["p0".into(), "p1".into()]).await;

    // SIGTERM hands over every group the node leads before it stops.
    let mut stopping = cluster.nodes[1].take().unwrap();
    stopping.terminate();
    let log = stopping.log_text();
    assert!(log.contains("handed leadership over before stopping"), "node 2 handed group 1 over:\n{log}");
    let handed = leaders_when(&cluster, Duration::from_secs(10), |l| l[1].0 != 2).await;
    assert_eq!((handed[0], handed[2], handed[3]), (back[0], back[2], back[3]), "the other groups kept their leaders");
}
