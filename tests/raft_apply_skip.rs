//! recovery.md, "A poisoned entry stops every node", rehearsed on three real
//! nodes under load: a committed entry that apply refuses (the test switch
//! QUEEN_TEST_APPLY_REFUSE_KV_KEY makes apply refuse one KV key, as a bug
//! would, on every node) stops apply on the nodes that commit it, and each
//! names it in /health (index, digest, class, effect); QUEEN_RAFT_APPLY_SKIP
//! with that index and digest on every node, and a restart of all, bring
//! the cluster back with the entry a no-op and nothing else lost.

mod common;

use common::cluster::{writer, Cluster, Ledger};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const REFUSE: (&str, &str) = ("QUEEN_TEST_APPLY_REFUSE_KV_KEY", "ops/poison");

async fn health(cluster: &Cluster, i: usize) -> (u16, Value) {
    let node = cluster.node(i);
    let r = node.http.get(node.url("/health")).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn kv_put(cluster: &Cluster, i: usize, key: &str, value: &str) -> u16 {
    let node = cluster.node(i);
    let r = node
        .http
        .put(node.url(&format!("/api/v1/kv/ops/{key}")))
        .json(&json!({"value": value, "forever": true}))
        .send()
        .await;
    r.map_or(0, |r| r.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_poisoned_entry_stops_apply_and_apply_skip_with_its_digest_brings_the_cluster_back_losing_nothing_else() {
    let mut cluster = Cluster::start_with(3, &[REFUSE]).await;
    let leader = cluster.leader().await;
    let through = (leader + 1) % 3;

    let ledger: Ledger = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(writer(cluster.node(through).url("/api/v1/push"), ledger.clone(), through, stop.clone()));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(kv_put(&cluster, through, "before", "intact").await, 200, "a KV write a moment before the poison");

    // The poisoned write is never answered as applied.
    let status = kv_put(&cluster, through, "poison", "x").await;
    assert_ne!(status, 200, "the write apply refuses was answered as applied");

    // The nodes that committed it stop applying and name it, alike.
    let deadline = Instant::now() + Duration::from_secs(20);
    let failures = loop {
        let mut failures = Vec::new();
        for i in 0..3 {
            let (code, h) = health(&cluster, i).await;
            let failure = h["raft"]["apply"]["failure"].clone();
            if !failure.is_null() {
                assert_eq!(code, 503, "node {} stopped on an entry and answered /health {code}: {h}", i + 1);
                assert_eq!(h["raft"]["role"], "stopped", "{h}");
                failures.push(failure);
            }
        }
        if failures.len() >= 2 || Instant::now() > deadline {
            break failures;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(failures.len() >= 2, "two nodes at least report the refused entry: {failures:?}");
    let first = &failures[0];
    for f in &failures {
        assert_eq!(
            (&f["index"], &f["digest"]),
            (&first["index"], &first["digest"]),
            "the nodes disagree: {failures:?}"
        );
    }
    assert_eq!(first["class"], "deterministic", "{first}");
    assert_eq!(first["effect"], "#0 kv_put", "{first}");
    let index = first["index"].as_u64().unwrap();
    let skip = format!("{index}:{}", first["digest"].as_str().unwrap());
    eprintln!("the nodes stopped on {first}");

    stop.store(true, Ordering::Release);
    let (_, retried) = tokio::join!(tokio::time::sleep(Duration::from_millis(100)), load);
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged, {} attempts retried", ledger.len(), retried.unwrap());

    // QUEEN_RAFT_APPLY_SKIP on every node, and a restart of all (the test
    // switch stays on: the skip, not its absence, is what lets them pass).
    for i in 0..3 {
        cluster.nodes[i].as_mut().unwrap().kill9();
    }
    for i in 0..3 {
        cluster.start_node_with(i, &[REFUSE, ("QUEEN_RAFT_APPLY_SKIP", &skip)]).await;
    }
    let leader = cluster.leader().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while kv_put(&cluster, leader, "probe", "after").await != 200 {
        assert!(Instant::now() < deadline, "the probe does not commit after the skip");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for i in 0..3 {
        let deadline = Instant::now() + Duration::from_secs(20);
        let h = loop {
            let (code, h) = health(&cluster, i).await;
            if code == 200 && h["raft"]["apply"]["skipped"][0]["index"] == index {
                break h;
            }
            assert!(Instant::now() < deadline, "node {} did not skip entry {index}: {h}", i + 1);
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(h["raft"]["apply"]["failure"].is_null(), "{h}");
        let log = cluster.node(i).log_text();
        let line = format!("QUEEN_RAFT_APPLY_SKIP: entry {index} is REPLACED by a skip marker");
        assert!(log.contains(&line), "node {} logged no skip line; log:\n{log}", i + 1);
    }

    // The entry is a no-op; the write before it and every push are intact.
    let node = cluster.node(leader);
    let poison: Value = node.http.get(node.url("/api/v1/kv/ops/poison")).send().await.unwrap().json().await.unwrap();
    assert_eq!(poison["found"], false, "the skipped KV write applied: {poison}");
    let before: Value = node.http.get(node.url("/api/v1/kv/ops/before")).send().await.unwrap().json().await.unwrap();
    assert_eq!(before["value"], "intact", "{before}");
    cluster.check_ledger(&ledger, "cluster", &[format!("p{through}")]).await;

    // Without the variable, the skip marker keeps the entry a no-op.
    let i = (leader + 1) % 3;
    cluster.nodes[i].as_mut().unwrap().kill9();
    cluster.start_node_with(i, &[REFUSE]).await;
    let (code, h) = health(&cluster, i).await;
    assert_eq!(code, 200, "{h}");
    assert_eq!(h["raft"]["apply"]["skipped"][0]["index"], index, "{h}");
}
