//! The cluster version gate (recovery.md, "A rolling restart goes wrong"),
//! on three real nodes, with the test switch QUEEN_TEST_EFFECT_CATALOGUE
//! standing in for a newer build: a new cluster of this build (catalogue 5)
//! is raised from 1 to 5 once all three answer; rolled forward one node at
//! a time, it keeps writing version 5 while any member reads only 5, so a
//! node rolled back still boots; once all three read 6 the leader raises
//! the cluster to 6, and from then on the older build refuses to boot,
//! naming both versions.

mod common;

use common::cluster::{with, Cluster};
use common::expect_refusal;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const NEWER: (&str, &str) = ("QUEEN_TEST_EFFECT_CATALOGUE", "6");
const THIS_BUILD: (&str, &str) = ("QUEEN_TEST_EFFECT_CATALOGUE", "5");

async fn catalogue(cluster: &Cluster, i: usize) -> Value {
    let node = cluster.node(i);
    let health: Value = node.http.get(node.url("/health")).send().await.unwrap().json().await.unwrap();
    health["raft"]["catalogue"].clone()
}

/// A write through node `via` commits.
async fn probe(cluster: &Cluster, via: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let node = cluster.node(via);
        let body = json!({"value": "probe", "ttlSeconds": 60});
        let r = node.http.put(node.url("/api/v1/kv/ops/probe")).json(&body).send().await;
        if r.is_ok_and(|r| r.status() == 200) {
            return;
        }
        assert!(Instant::now() < deadline, "the probe does not commit through node {}", via + 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until every node sees the cluster writing `version`.
async fn cluster_at(cluster: &Cluster, version: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0..3 {
        while catalogue(cluster, i).await["cluster"] != version {
            assert!(Instant::now() < deadline, "node {} never saw the cluster at {version}", i + 1);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Restarts node `i` with `extra` in its environment.
async fn restart(cluster: &mut Cluster, i: usize, extra: &[(&str, &str)]) {
    cluster.nodes[i].as_mut().unwrap().terminate();
    cluster.start_node_with(i, extra).await;
    probe(cluster, i).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cluster_moves_to_a_newer_catalogue_only_once_every_member_reads_it_and_then_refuses_a_rollback() {
    let mut cluster = Cluster::start(3).await;
    probe(&cluster, 0).await;
    cluster_at(&cluster, 5).await;
    assert_eq!(catalogue(&cluster, 0).await, json!({"build": 5, "cluster": 5}));

    // Two of three on the newer build: the cluster stays at 5, so the
    // first rolls back and boots.
    restart(&mut cluster, 0, &[NEWER]).await;
    restart(&mut cluster, 1, &[NEWER]).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(catalogue(&cluster, 0).await, json!({"build": 6, "cluster": 5}), "raised with a member on 5");
    restart(&mut cluster, 0, &[THIS_BUILD]).await;
    restart(&mut cluster, 0, &[NEWER]).await;

    // The third rolls forward: the leader raises the cluster to 6.
    restart(&mut cluster, 2, &[NEWER]).await;
    cluster_at(&cluster, 6).await;
    let log: String = (0..3).map(|i| cluster.node(i).log_text()).collect();
    assert!(log.contains("raised the cluster's effect catalogue version"), "no node logged the raise");

    // The older build now refuses the store, naming both versions.
    cluster.nodes[1].as_mut().unwrap().terminate();
    let env = with(&cluster.env[1], &[THIS_BUILD]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let refusal = expect_refusal(&cluster.dir(1), &env);
    let line = "this build reads effect catalogue version 5, and the cluster this store belongs to writes version 6";
    assert!(refusal.contains(line), "{refusal}");
    // The newer build still boots on it, and the cluster commits.
    cluster.start_node_with(1, &[NEWER]).await;
    probe(&cluster, 1).await;
}
