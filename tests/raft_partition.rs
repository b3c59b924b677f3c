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

/// A KV call through node `i`: its status and body.
async fn kv(cluster: &NsCluster, i: usize, op: serde_json::Value) -> (u16, serde_json::Value) {
    let body = json!({"operations": [op]});
    let r = cluster.http.post(cluster.url(i, "/api/v1/kv")).json(&body).send().await.expect("a KV call");
    (r.status().as_u16(), r.json().await.unwrap_or_default())
}

/// A leader cut off from its majority still holds the state it had: a read
/// through it (or through a follower that can reach only it, and forwards
/// there) must not answer that state once the majority has moved on. Five
/// nodes, so that the old leader keeps a follower of its own beside the
/// three that elect a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_isolated_leader_answers_no_read_from_the_state_it_was_left_with() {
    if !available() {
        return;
    }
    let cluster = NsCluster::start(5, 63).await;
    let all = [1, 2, 3, 4, 5];
    let old = cluster.leader_among(&all).await;
    let put = |value: &str| json!({"op": "put", "ns": "lin", "key": "k", "value": value, "forever": true});
    let get = json!({"op": "get", "ns": "lin", "key": "k"});
    let (status, body) = kv(&cluster, old, put("old")).await;
    assert_eq!((status, &body["results"][0]["applied"]), (200, &json!(true)), "{body}");
    // The old leader keeps one follower, `kept`; the other three are the majority.
    let kept = *all.iter().find(|i| **i != old).unwrap();
    let majority: Vec<usize> = all.iter().copied().filter(|i| *i != old && *i != kept).collect();
    for &cut_off in &[old, kept] {
        for &m in &majority {
            cluster.cut(cut_off, m);
        }
    }
    let new = cluster.leader_among(&majority).await;
    let (status, body) = kv(&cluster, majority[0], put("new")).await;
    assert_eq!((status, &body["results"][0]["applied"]), (200, &json!(true)), "the majority commits: {body}");

    // Through the old leader, and through its follower (which forwards to
    // it): never the old value; 503 `timeout` within the write timeout (5 s).
    for (through, what) in [(old, "the isolated old leader"), (kept, "a follower of the isolated old leader")] {
        for _ in 0..3 {
            let started = Instant::now();
            let (status, body) = kv(&cluster, through, get.clone()).await;
            let took = started.elapsed();
            assert_ne!(body["results"][0]["value"], json!("old"), "{what} answered the value the majority overwrote");
            assert_eq!(status, 503, "{what} answered {body}");
            assert_eq!(body["code"], json!("timeout"), "{what}: {body}");
            assert!(took < Duration::from_secs(7), "{what} took {took:?} to answer 503");
        }
    }
    for &m in &majority {
        let (status, body) = kv(&cluster, m, get.clone()).await;
        assert_eq!((status, &body["results"][0]["value"]), (200, &json!("new")), "through node {m}: {body}");
    }
    cluster.heal();
    cluster.leader_among(&all).await;
    for i in all {
        let (status, body) = kv(&cluster, i, get.clone()).await;
        assert_eq!(
            (status, &body["results"][0]["value"]),
            (200, &json!("new")),
            "through node {i} after the heal: {body}"
        );
    }
    eprintln!("leader {old} and follower {kept} cut off, {new} elected by {majority:?}: no stale read");
}
