//! Network faults between real nodes, each in a network namespace of its
//! own on one bridge: a partition that isolates the leader, and a bridge
//! (two nodes that cannot reach each other, both reaching the third), under
//! a writer with a ledger of every acknowledged push. Needs root, iproute2
//! and iptables (`.ci/run` installs iptables); skipped, saying so, without.

mod common;

use common::cluster::{writer, Ledger};
use common::kafka::idempotent_writer;
use common::netns::{available, NsCluster};
use common::push_body;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partition_that_isolates_the_leader_loses_no_acknowledged_write() {
    if !available() {
        return;
    }
    let cluster = NsCluster::start(3, 61).await;
    let old = cluster.leader_among(&[1, 2, 3]).await;
    let others: Vec<usize> = (1..=3).filter(|i| *i != old).collect();
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(writer(cluster.url(others[0], "/api/v1/push"), ledger.clone(), 0, stop.clone()));
    // An idempotent Kafka producer beside it, through every node in turn
    // from the other follower on: the isolated one times out and it moves on.
    let kafka_ledger: Ledger = Arc::default();
    let brokers = [others[1], old, others[0]].iter().map(|&i| (cluster.addr(i), 9092)).collect();
    let kafka = tokio::spawn(idempotent_writer(brokers, "kcluster", kafka_ledger.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(1000)).await;

    for &o in &others {
        cluster.cut(old, o);
    }
    let new = cluster.leader_among(&others).await;
    assert_ne!(new, old);
    let before = ledger.lock().unwrap().len();

    // The isolated leader cannot commit: a write through it answers 503
    // within its timeout (QUEEN_RAFT_WRITE_TIMEOUT_MS is 5 s here).
    let started = Instant::now();
    let body = push_body(&[("cluster".into(), "isolated".into(), "iso-1".into(), json!({}))]);
    let r = cluster.http.post(cluster.url(old, "/api/v1/push")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 503, "{}", r.text().await.unwrap());
    assert!(started.elapsed() < Duration::from_secs(8), "the 503 took {:?}", started.elapsed());

    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(ledger.lock().unwrap().len() > before, "the majority side went on committing");
    cluster.heal();
    cluster.leader_among(&[1, 2, 3]).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Release);
    let retried = load.await.unwrap();
    let kafka_retried = kafka.await.unwrap();
    let ledger = ledger.lock().unwrap().clone();
    let kafka_ledger = kafka_ledger.lock().unwrap().clone();
    eprintln!(
        "leader {old} isolated, {new} elected: {} pushes acknowledged, {retried} retried; {} Kafka records acknowledged, {kafka_retried} retried",
        ledger.len(),
        kafka_ledger.len()
    );
    assert!(!kafka_ledger.is_empty(), "the Kafka producer wrote nothing");
    cluster.check_ledger(&[1, 2, 3], &ledger, "cluster", "p0").await;
    // Every acknowledged Kafka record at its offset, gapless, once.
    cluster.check_ledger(&[1, 2, 3], &kafka_ledger, "kcluster", "0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bridge_keeps_the_cluster_committing_and_loses_nothing() {
    if !available() {
        return;
    }
    let cluster = NsCluster::start(3, 62).await;
    let leader = cluster.leader_among(&[1, 2, 3]).await;
    // The leader and one follower cannot reach each other; the third
    // reaches both (a bridge).
    let cut_off = if leader == 1 { 2 } else { 1 };
    let bridge = (1..=3).find(|i| *i != leader && *i != cut_off).unwrap();
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(writer(cluster.url(bridge, "/api/v1/push"), ledger.clone(), 0, stop.clone()));
    // A Kafka producer through the node cut off from the leader first.
    let kafka_ledger: Ledger = Arc::default();
    let brokers = [cut_off, bridge, leader].iter().map(|&i| (cluster.addr(i), 9092)).collect();
    let kafka = tokio::spawn(idempotent_writer(brokers, "kbridge", kafka_ledger.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(800)).await;
    cluster.cut(leader, cut_off);
    let during = ledger.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert!(ledger.lock().unwrap().len() > during, "writes through the bridge went on committing");
    cluster.heal();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Release);
    load.await.unwrap();
    let kafka_retried = kafka.await.unwrap();
    let ledger = ledger.lock().unwrap().clone();
    let kafka_ledger = kafka_ledger.lock().unwrap().clone();
    eprintln!(
        "nodes {leader} and {cut_off} cut apart, {bridge} bridging: {} pushes, {} Kafka records ({kafka_retried} retried) acknowledged",
        ledger.len(),
        kafka_ledger.len()
    );
    assert!(!kafka_ledger.is_empty(), "the Kafka producer wrote nothing");
    cluster.leader_among(&[1, 2, 3]).await;
    cluster.check_ledger(&[1, 2, 3], &ledger, "cluster", "p0").await;
    cluster.check_ledger(&[1, 2, 3], &kafka_ledger, "kbridge", "0").await;
}
