//! The disk gate: past QUEEN_STORAGE_FULL_PCT of the volume, writes that grow
//! storage answer 507 storage_full while reads, pops and acks go on.

mod common;

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
