//! A queue deleted while pushes to it are still being written: a push
//! planned after the delete creates the queue anew instead of appending to
//! the one whose rows the delete removes, so apply never meets a partition
//! that is gone, the node keeps serving, and it boots again after kill -9.

mod common;

use common::{push_body, Node};
use serde_json::json;

const ROUNDS: usize = 20;
const PUSHERS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_a_queue_under_concurrent_pushes_keeps_the_node_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    let client = reqwest::Client::new();
    let mut deleted = 0;
    for round in 0..ROUNDS {
        let pushers: Vec<_> = (0..PUSHERS)
            .map(|w| {
                let (client, url) = (client.clone(), node.url("/api/v1/push"));
                tokio::spawn(async move {
                    for i in 0..10 {
                        let items = vec![(
                            "doomed".to_string(),
                            "p0".to_string(),
                            format!("r{round}-w{w}-{i}"),
                            json!({ "i": i }),
                        )];
                        let answer = client.post(&url).json(&push_body(&items)).send().await.unwrap();
                        assert_eq!(answer.status().as_u16(), 201, "{:?}", answer.text().await);
                    }
                })
            })
            .collect();
        for _ in 0..3 {
            let answer = client.delete(node.url("/api/v1/resources/queues/doomed")).send().await.unwrap();
            assert_eq!(answer.status().as_u16(), 200);
            let body: serde_json::Value = answer.json().await.unwrap();
            deleted += usize::from(body["deleted"] == json!(true));
        }
        for p in pushers {
            p.await.unwrap();
        }
    }
    assert!(deleted > ROUNDS, "too few deletes met a queue to mean anything: {deleted}");
    let items = vec![("doomed".to_string(), "p0".to_string(), "after".to_string(), json!({ "i": -1 }))];
    let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!(status, 201, "{body}");

    node.kill9();
    let node = node.restart().await;
    let read = node.read_all("doomed", "p0").await;
    assert!(read.error.is_none(), "{:?}", read.error);
    for (i, (offset, _, _)) in read.records.iter().enumerate() {
        assert_eq!(*offset, i as u64, "the queue made anew reads without gaps");
    }
    assert!(read.records.iter().any(|(_, txid, _)| txid == "after"), "the last push survived the restart");
}
