//! Out of file descriptors the node degrades and never dies: under a limit of
//! 1,024 descriptors (soft and hard, so boot cannot raise it), a node keeps
//! 5,000 queue logs, each with a file of its own, by closing the least
//! recently used (QUEEN_QLOG_OPEN_FILES) and opening it again when needed.
//!
//! The limit is set on this test process, and the node inherits it; this
//! file holds one test so no other test runs under it.

mod common;

use common::Node;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const QUEUES: usize = 5000;
const LIMIT: u64 = 1024;
/// Items per push, and partitions per fetch.
const PER_REQUEST: usize = 1000;

fn queue(i: usize) -> String {
    format!("fd-{i:05}")
}

/// One message in each queue, in pushes of `PER_REQUEST` items.
async fn push_each(node: &Node, round: usize) {
    for chunk in (0..QUEUES).collect::<Vec<_>>().chunks(PER_REQUEST) {
        let items: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"queue": queue(*i), "partition": "p", "transactionId": format!("{i}-{round}"), "payload": {"i": i, "round": round}}))
            .collect();
        let (status, body) = node.post("/api/v1/push", &json!({ "items": items })).await;
        assert_eq!(status, 201, "push round {round}: {body}\n{}", node.log_text());
    }
}

/// Every queue's messages, by queue, read with fetches of many partitions.
async fn read_each(node: &Node) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for chunk in (0..QUEUES).collect::<Vec<_>>().chunks(PER_REQUEST) {
        let entries: Vec<Value> =
            chunk.iter().map(|i| json!({"queue": queue(*i), "partition": "p", "offset": 0})).collect();
        let (status, body) = node.post("/api/v1/fetch", &json!({ "entries": entries })).await;
        assert_eq!(status, 200, "fetch: {body}");
        for (i, e) in chunk.iter().zip(body["entries"].as_array().unwrap()) {
            assert!(e["error"].is_null(), "{}: {e}", queue(*i));
            let ids = e["records"].as_array().unwrap().iter().map(|r| r["transactionId"].as_str().unwrap().to_string());
            out.insert(queue(*i), ids.collect());
        }
    }
    out
}

fn expected(rounds: usize) -> BTreeMap<String, Vec<String>> {
    (0..QUEUES).map(|i| (queue(i), (0..rounds).map(|r| format!("{i}-{r}")).collect())).collect()
}

#[tokio::test]
async fn five_thousand_queues_under_a_limit_of_1024_descriptors() {
    rlimit::Resource::NOFILE.set(LIMIT, LIMIT).expect("lower this process's descriptor limit");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    assert!(node.log_text().contains("qlog files kept open at most"), "{}", node.log_text());
    push_each(&node, 0).await;
    // Every log again, so each file closed to make room is opened again.
    push_each(&node, 1).await;
    assert_eq!(read_each(&node).await, expected(2));
    let open = std::fs::read_dir(format!("/proc/{}/fd", node.child.id())).unwrap().count() as u64;
    assert!(open < LIMIT, "{open} descriptors open");
    node.terminate();

    let node = node.restart().await;
    assert_eq!(read_each(&node).await, expected(2), "every message back after a restart");
    push_each(&node, 2).await;
    assert_eq!(read_each(&node).await, expected(3));
    let mut node = node;
    assert!(node.child.try_wait().unwrap().is_none(), "the node is still up");
    assert!(!node.log_text().contains("FATAL"), "{}", node.log_text());
}
