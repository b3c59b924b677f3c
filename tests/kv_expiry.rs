//! Expired KV rows are swept: a key whose TTL ran out stops taking memory
//! (the store's row count falls), a key written again before the sweep
//! stays, and the sweep is an entry like any other, so a restart keeps it.

mod common;

use common::Node;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn put(node: &Node, key: &str, body: Value) {
    let r = node.http.put(node.url(&format!("/api/v1/kv/sweep/{key}"))).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
}

async fn kv_keys(node: &Node) -> u64 {
    let r = node.http.get(node.url("/api/v1/resources/overview")).send().await.unwrap();
    r.json::<Value>().await.unwrap()["kvKeys"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_keys_are_swept_and_stay_gone_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::start(&tmp.path().join("data"), &[]).await;
    for i in 0..50 {
        put(&node, &format!("short-{i}"), json!({"value": i, "ttlSeconds": 1})).await;
    }
    put(&node, "forever", json!({"value": "kept", "forever": true})).await;
    put(&node, "renewed", json!({"value": 1, "ttlSeconds": 1})).await;
    put(&node, "renewed", json!({"value": 2, "ttlSeconds": 3600})).await;
    assert_eq!(kv_keys(&node).await, 52);
    let deadline = Instant::now() + Duration::from_secs(10);
    while kv_keys(&node).await > 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(kv_keys(&node).await, 2, "the 50 expired keys are swept; forever and renewed stay");
    node.kill9();
    let node = node.restart().await;
    assert_eq!(kv_keys(&node).await, 2);
    let r = node.http.get(node.url("/api/v1/kv/sweep/renewed")).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["value"], json!(2));
}
