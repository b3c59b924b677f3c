//! Bad input over HTTP gets a clear JSON error with a stable code and a
//! fitting status, and loses nothing: the node keeps serving throughout.

mod common;

use common::{push_body, Node};
use serde_json::{json, Value};

fn one(queue: &str, txid: &str, payload: Value) -> Value {
    push_body(&[(queue.to_string(), "Default".to_string(), txid.to_string(), payload)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_errors_and_the_node_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let env = [("QUEEN_MAX_PAYLOAD_BYTES", "1024"), ("QUEEN_HTTP_MAX_BODY_BYTES", "65536")];
    let node = Node::start(&dir, &env).await;
    let (status, _) = node.post("/api/v1/push", &one("good", "g0", json!({"ok": true}))).await;
    assert_eq!(status, 201);

    // A good writer keeps going while the bad requests arrive.
    let url = node.url("/api/v1/push");
    let writer = tokio::spawn(async move {
        let client = reqwest::Client::new();
        for i in 1..=200 {
            let r = client.post(&url).json(&one("good", &format!("g{i}"), json!(i))).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 201);
        }
    });

    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("malformed JSON", b"{\"items\": [".to_vec(), 400, "invalid_json"),
        ("not an object", b"[1, 2]".to_vec(), 400, "invalid_body"),
        ("missing items", b"{}".to_vec(), 400, "missing_field"),
        ("items not an array", br#"{"items": 3}"#.to_vec(), 400, "invalid_field"),
        ("empty items", br#"{"items": []}"#.to_vec(), 400, "invalid_field"),
        ("item not an object", br#"{"items": ["x"]}"#.to_vec(), 400, "invalid_field"),
        ("missing queue", br#"{"items": [{"payload": 1}]}"#.to_vec(), 400, "missing_field"),
        ("queue mistyped", br#"{"items": [{"queue": 5, "payload": 1}]}"#.to_vec(), 400, "invalid_field"),
        ("empty queue", br#"{"items": [{"queue": "", "payload": 1}]}"#.to_vec(), 400, "invalid_field"),
        (
            "partition mistyped",
            br#"{"items": [{"queue": "q", "partition": [], "payload": 1}]}"#.to_vec(),
            400,
            "invalid_field",
        ),
        (
            "transactionId mistyped",
            br#"{"items": [{"queue": "q", "transactionId": 1, "payload": 1}]}"#.to_vec(),
            400,
            "invalid_field",
        ),
        ("missing payload", br#"{"items": [{"queue": "q"}]}"#.to_vec(), 400, "missing_field"),
        (
            "payload over the limit",
            serde_json::to_vec(&one("q", "big", json!("x".repeat(2000)))).unwrap(),
            413,
            "payload_too_large",
        ),
        (
            "body over the limit",
            serde_json::to_vec(&one("q", "huge", json!("x".repeat(70_000)))).unwrap(),
            413,
            "body_too_large",
        ),
    ];
    for (what, body, status, code) in cases {
        let (got, answer) = node.post_raw("/api/v1/push", body).await;
        assert_eq!((got, answer["code"].as_str()), (status, Some(code)), "{what}: {answer}");
        assert!(answer["error"].as_str().is_some_and(|e| !e.is_empty()), "{what}: the error says what is wrong");
    }
    let (got, answer) = node
        .post_raw(
            "/api/v1/fetch",
            br#"{"entries": [{"queue": "good", "partition": "Default", "offset": -1}]}"#.to_vec(),
        )
        .await;
    assert_eq!((got, answer["code"].as_str()), (400, Some("invalid_field")), "{answer}");
    let (got, answer) = node.post_raw("/api/v1/fetch", b"nope".to_vec()).await;
    assert_eq!((got, answer["code"].as_str()), (400, Some("invalid_json")), "{answer}");
    let r = node.http.get(node.url("/api/v1/nowhere")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "unknown_route");

    writer.await.unwrap();
    // Nothing of the refused requests was stored, everything good was.
    assert_eq!(node.read_all("q", "Default").await.error.as_deref(), Some("UNKNOWN_TOPIC_OR_PARTITION"));
    let good = node.read_all("good", "Default").await;
    assert_eq!(good.records.len(), 201);

    // Per-entry errors of a fetch, as the client expects them.
    let (status, body) = node
        .post(
            "/api/v1/fetch",
            &json!({"entries": [
                {"queue": "missing", "partition": "Default", "offset": 0},
                {"queue": "good", "partition": "missing", "offset": 0},
                {"queue": "good", "partition": "Default", "offset": 500},
                {"queue": "good", "partition": "Default", "offset": 201},
            ]}),
        )
        .await;
    assert_eq!(status, 200);
    let e = &body["entries"];
    assert_eq!(e[0]["error"], "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(e[1]["error"], "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(e[2]["error"], "OFFSET_OUT_OF_RANGE");
    assert_eq!((e[2]["highWatermark"].as_u64(), e[2]["logStartOffset"].as_u64()), (Some(201), Some(0)));
    assert!(e[3]["error"].is_null(), "reading at the high watermark is empty, not an error");
    assert_eq!(e[3]["records"], json!([]));
}
