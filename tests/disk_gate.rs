//! The disk gate: past QUEEN_STORAGE_FULL_PCT of the volume, writes that grow
//! storage answer 507 storage_full while reads, pops and acks go on.

mod common;

use common::volume::{incompressible, SmallVolume};
use common::{push_body, Node};
use serde_json::{json, Value};

#[tokio::test]
async fn a_full_volume_refuses_growth_and_keeps_serving_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    let items = vec![("gate".to_string(), "Default".to_string(), "m1".to_string(), json!(1))];
    assert_eq!(node.post("/api/v1/push", &push_body(&items)).await.0, 201);
    node.terminate();
    // Every volume is at least 0% full: the gate is closed from the start.
    let node = Node::start(&dir, &[("QUEEN_STORAGE_FULL_PCT", "0")]).await;
    let items = vec![("gate".to_string(), "Default".to_string(), "m2".to_string(), json!(2))];
    let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!((status, body["code"].as_str()), (507, Some("storage_full")), "{body}");
    let put = json!({"operations": [{"op": "put", "ns": "gate", "key": "k", "value": 1, "forever": true}]});
    assert_eq!(node.post("/api/v1/kv", &put).await.0, 507);
    let get = json!({"operations": [{"op": "get", "ns": "gate", "key": "k"}]});
    assert_eq!(node.post("/api/v1/kv", &get).await.0, 200, "reads go on");
    let r = node.http.get(node.url("/api/v1/pop/queue/gate?batch=5&wait=false")).send().await.unwrap();
    let m = r.json::<Value>().await.unwrap()["messages"][0].clone();
    assert_eq!(m["transactionId"], "m1", "pops go on");
    let ack = json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]});
    let (status, answer) = node.post("/api/v1/ack", &ack).await;
    assert_eq!((status, answer[0]["success"].as_bool()), (200, Some(true)), "acks go on");
    assert_eq!(node.read_all("gate", "Default").await.records.len(), 1);
}

async fn push_big(node: &Node, queue: &str, id: &str, len: usize) -> (u16, Value) {
    let items = vec![(queue.to_string(), "Default".to_string(), id.to_string(), json!(incompressible(len)))];
    node.post("/api/v1/push", &push_body(&items)).await
}

#[tokio::test]
async fn a_full_volume_frees_space_when_a_queue_is_deleted_and_takes_writes_again_without_a_restart() {
    let Some(vol) = SmallVolume::mount(24) else { return };
    let mut node = Node::start(&vol.path.join("data"), &[("QUEEN_STORAGE_FULL_PCT", "50")]).await;
    // Until a push is refused even once the gate has measured what the
    // pushes before it stored (it counts a body's bytes until then).
    let mut refused = None;
    for i in 0..200 {
        let (status, body) = push_big(&node, "filler", &format!("f{i}"), 256 * 1024).await;
        match (status, &refused) {
            (201, _) => refused = None,
            (_, None) => {
                refused = Some((status, body));
                tokio::time::sleep(std::time::Duration::from_millis(600)).await;
            }
            (_, Some(_)) => break,
        }
    }
    let (status, body) = refused.expect("the volume filled to the gate");
    assert_eq!((status, body["code"].as_str()), (507, Some("storage_full")), "{body}");
    assert_eq!(push_big(&node, "other", "o1", 256 * 1024).await.0, 507, "the gate is closed for every queue");
    let full = vol.used_pct();
    assert!(full >= 45.0, "filled to {full:.1}%");
    // A restart does not open a gate the volume keeps closed.
    node.terminate();
    let node = Node::start(&vol.path.join("data"), &[("QUEEN_STORAGE_FULL_PCT", "50")]).await;
    assert_eq!(push_big(&node, "other", "o1", 256 * 1024).await.0, 507, "the gate is closed after a restart");

    let r = node.http.delete(node.url("/api/v1/resources/queues/filler")).send().await.unwrap();
    assert_eq!(r.status(), 200, "a delete goes on while the gate is closed");
    // The deleted queue's files go, and the gate opens, with no write between.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while vol.used_pct() > 10.0 {
        assert!(std::time::Instant::now() < deadline, "still {:.1}% used; log:\n{}", vol.used_pct(), node.log_text());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let (status, body) = push_big(&node, "other", "o2", 1000).await;
    assert_eq!(status, 201, "writes are taken again: {body}");
    assert_eq!(node.read_all("other", "Default").await.records.len(), 1);
}

#[tokio::test]
async fn writers_side_by_side_cannot_carry_the_volume_past_the_gate() {
    let Some(vol) = SmallVolume::mount(32) else { return };
    let node = std::sync::Arc::new(Node::start(&vol.path.join("data"), &[("QUEEN_STORAGE_FULL_PCT", "50")]).await);
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let node = node.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    let (status, body) = push_big(&node, &format!("w{w}"), &format!("{w}-{i}"), 128 * 1024).await;
                    if status == 507 {
                        return;
                    }
                    assert_eq!(status, 201, "{body}");
                }
                panic!("writer {w} was never refused");
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    // Everything admitted has answered, so it is on the volume.
    let used = vol.used_pct();
    assert!((45.0..=52.0).contains(&used), "the volume stopped at {used:.1}% for a gate at 50%");
}
