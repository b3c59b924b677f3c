//! Process faults between real nodes, each in a network namespace of its
//! own on one bridge, under an HTTP writer and an idempotent Kafka producer
//! (acks=all) that both keep a ledger: the leader killed -9 and restarted,
//! the next leader frozen with SIGSTOP and thawed, a follower killed -9 and
//! restarted. Every node then serves every acknowledged push and record at
//! its offset, gapless, once, and a retry of an acknowledged transactionId
//! through another node answers its original offset. Needs root, iproute2
//! and iptables; skipped, saying so, without.

mod common;

use common::cluster::{writer, Ledger};
use common::kafka::idempotent_writer;
use common::netns::{available, NsCluster};
use common::push_body;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_and_sigstop_of_leaders_and_a_follower_lose_no_acknowledged_http_or_kafka_write() {
    if !available() {
        return;
    }
    let mut cluster = NsCluster::start(3, 63).await;
    let all = [1, 2, 3];
    let first = cluster.leader_among(&all).await;
    let follower = all.into_iter().find(|i| *i != first).unwrap();

    let (ledger, kafka_ledger): (Ledger, Ledger) = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let http = tokio::spawn(writer(cluster.url(follower, "/api/v1/push"), ledger.clone(), 0, stop.clone()));
    let brokers = all.iter().map(|&i| (cluster.addr(i), 9092)).collect();
    let kafka = tokio::spawn(idempotent_writer(brokers, "kcrash", kafka_ledger.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // The leader killed -9, and back.
    cluster.kill9(first);
    let others: Vec<usize> = all.into_iter().filter(|i| *i != first).collect();
    let second = cluster.leader_among(&others).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.restart(first).await;

    // The next leader frozen, and thawed.
    cluster.signal(second, libc::SIGSTOP);
    let awake: Vec<usize> = all.into_iter().filter(|i| *i != second).collect();
    let third = cluster.leader_among(&awake).await;
    // Writes commit while it is frozen (the writers may be stuck on it: a
    // push through the new leader says so for certain).
    let body = push_body(&[("frozen".into(), "p".into(), "while-frozen".into(), json!({}))]);
    let r = cluster.http.post(cluster.url(third, "/api/v1/push")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201, "a write while the old leader was frozen: {}", r.text().await.unwrap());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.signal(second, libc::SIGCONT);

    // A follower killed -9, and back.
    let victim = all.into_iter().find(|i| *i != third && *i != follower).unwrap_or(second);
    cluster.kill9(victim);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    cluster.restart(victim).await;
    cluster.leader_among(&all).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;

    stop.store(true, Ordering::Release);
    let (retried, kafka_retried) = (http.await.unwrap(), kafka.await.unwrap());
    let ledger = ledger.lock().unwrap().clone();
    let kafka_ledger = kafka_ledger.lock().unwrap().clone();
    eprintln!(
        "leaders {first}, {second}, {third}; follower {victim} killed: {} pushes ({retried} retried), {} Kafka records ({kafka_retried} retried)",
        ledger.len(),
        kafka_ledger.len()
    );
    assert!(!kafka_ledger.is_empty(), "the Kafka producer wrote nothing");
    cluster.check_ledger(&all, &ledger, "cluster", "p0").await;
    cluster.check_ledger(&all, &kafka_ledger, "kcrash", "0").await;

    // A retry of an acknowledged push, through another node, answers its
    // original offset.
    let (txid, (partition, offset)) = ledger.iter().next().unwrap();
    let body = push_body(&[("cluster".into(), partition.clone(), txid.clone(), json!({}))]);
    let r = cluster.http.post(cluster.url(victim, "/api/v1/push")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let answer: Vec<Value> = r.json().await.unwrap();
    assert_eq!(answer[0]["offset"].as_u64(), Some(*offset), "the retry of {txid} answered {answer:?}");
}
