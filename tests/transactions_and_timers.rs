//! A transaction whose lease expired commits none of its effects; timers
//! scheduled before a SIGKILL each fire exactly once after the restart, and
//! a cancelled one never does.

mod common;

use base64::Engine;
use common::Node;
use serde_json::{json, Value};
use std::time::Duration;

#[tokio::test]
async fn a_transaction_with_an_expired_lease_commits_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    node.post("/api/v1/configure", &json!({"queue": "src", "options": {"leaseTime": 1}})).await;
    node.post("/api/v1/push", &json!({"items": [{"queue": "src", "payload": "job", "transactionId": "job-1"}]})).await;
    let r = node.http.get(node.url("/api/v1/pop/queue/src?batch=1&wait=false")).send().await.unwrap();
    let m = r.json::<Value>().await.unwrap()["messages"][0].clone();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let bundle = json!({
        "operations": [
            {"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]},
            {"type": "push", "items": [{"queue": "dst", "payload": "effect", "transactionId": "effect-1"}]},
        ],
        "requiredLeases": [m["leaseId"]],
        "kv": [{"op": "incr", "ns": "effects", "key": "count", "forever": true}],
        "timers": [{"op": "schedule", "queue": "dst", "timerKey": "t", "payload": "MQ==", "delayMs": 0, "txn": "timer-1"}],
    });
    let (status, answer) = node.post("/api/v1/transaction", &bundle).await;
    assert_eq!(status, 200);
    assert_eq!(answer["success"], json!(false), "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("rolled back"), "{answer}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        node.read_all("dst", "Default").await.error.as_deref(),
        Some("UNKNOWN_TOPIC_OR_PARTITION"),
        "no push, no timer fired"
    );
    let (_, kv) =
        node.post("/api/v1/kv", &json!({"operations": [{"op": "get", "ns": "effects", "key": "count"}]})).await;
    assert_eq!(kv["results"][0]["found"], json!(false), "no KV write");
    // The message was not acknowledged: it is delivered again.
    let r = node.http.get(node.url("/api/v1/pop/queue/src?batch=1&wait=false")).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["messages"][0]["transactionId"], "job-1");
}

#[tokio::test]
async fn timers_fire_exactly_once_across_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::start(&tmp.path().join("data"), &[]).await;
    let b64 = |v: &Value| base64::engine::general_purpose::STANDARD.encode(v.to_string());
    let ops: Vec<Value> = (0..40)
        .map(|i| json!({"op": "schedule", "queue": "fired", "timerKey": format!("t{i}"), "payload": b64(&json!({"i": i})), "delayMs": 100 + i * 25, "txn": format!("timer-{i}")}))
        .collect();
    let (status, answer) = node.post("/api/v1/timers", &json!({ "operations": ops })).await;
    assert_eq!(status, 200, "{answer}");
    let (_, cancel) = node
        .post("/api/v1/timers", &json!({"operations": [{"op": "cancel", "queue": "fired", "timerKey": "t39"}]}))
        .await;
    assert_eq!(cancel["results"][0]["status"], "cancelled");
    tokio::time::sleep(Duration::from_millis(400)).await;
    node.kill9();
    node = node.restart().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let read = node.read_all("fired", "Default").await;
    let mut seen: Vec<String> = read.records.iter().map(|(_, t, _)| t.clone()).collect();
    seen.sort();
    let mut expected: Vec<String> = (0..39).map(|i| format!("timer-{i}")).collect();
    expected.sort();
    assert_eq!(seen, expected, "each timer fired once, the cancelled one never");
    for (_, txn, payload) in &read.records {
        assert_eq!(format!("timer-{}", payload["i"]), *txn);
    }
}
