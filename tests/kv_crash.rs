//! KV writes survive SIGKILL: concurrent counters and puts while the node is
//! killed; after the restart every acknowledged increment is counted (and no
//! more than were sent), and every acknowledged put reads back.

mod common;

use common::Node;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_kv_writes_survive_kill9() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    let acked_incr = Arc::new(AtomicU64::new(0));
    let sent_incr = Arc::new(AtomicU64::new(0));
    let puts: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    for round in 0..5 {
        let url = node.url("/api/v1/kv");
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (url, acked, sent, puts) = (url.clone(), acked_incr.clone(), sent_incr.clone(), puts.clone());
                tokio::spawn(async move {
                    let http = reqwest::Client::new();
                    for i in 0.. {
                        let key = format!("r{round}-w{w}-{i}");
                        let ops = json!({"operations": [
                            {"op": "incr", "ns": "crash", "key": "counter", "forever": true},
                            {"op": "put", "ns": "crash", "key": key, "value": i, "forever": true},
                        ]});
                        sent.fetch_add(1, Ordering::Relaxed);
                        let Ok(r) = http.post(&url).json(&ops).send().await else { return };
                        let Ok(body) = r.json::<Value>().await else { return };
                        assert_eq!(body["results"][0]["applied"], json!(true), "{body}");
                        acked.fetch_add(1, Ordering::Relaxed);
                        puts.lock().unwrap().push((key, i));
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        node.kill9();
        for w in writers {
            w.await.unwrap();
        }
        node = node.restart().await;
        let (_, body) =
            node.post("/api/v1/kv", &json!({"operations": [{"op": "get", "ns": "crash", "key": "counter"}]})).await;
        let counter = body["results"][0]["value"].as_u64().unwrap_or(0);
        let (acked, sent) = (acked_incr.load(Ordering::Relaxed), sent_incr.load(Ordering::Relaxed));
        assert!(counter >= acked && counter <= sent, "counter {counter}: {acked} acknowledged, {sent} sent");
        let keys: Vec<(String, u64)> = puts.lock().unwrap().clone();
        for chunk in keys.chunks(200) {
            let ops: Vec<Value> = chunk.iter().map(|(k, _)| json!({"op": "get", "ns": "crash", "key": k})).collect();
            let (_, body) = node.post("/api/v1/kv", &json!({ "operations": ops })).await;
            for ((k, v), r) in chunk.iter().zip(body["results"].as_array().unwrap()) {
                assert_eq!(r["value"], json!(v), "acknowledged put {k} lost");
            }
        }
    }
    assert!(acked_incr.load(Ordering::Relaxed) > 100, "too few writes to mean anything");
}
