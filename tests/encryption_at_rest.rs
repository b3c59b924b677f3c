//! Encryption at rest: a queue configured with encryptionEnabled keeps no
//! plaintext payload in its qlog files, whether pushed over HTTP or produced
//! over Kafka, and reads give the plaintext back; without the key the node
//! refuses to boot, and a node without a key refuses to configure one.

mod common;

use common::kafka::{batch, KafkaConn};
use common::{expect_refusal, push_body, qlog_files, Node};
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{ApiKey, ProduceRequest, RequestKind, ResponseKind, TopicName};
use protocol::StrBytes;
use serde_json::json;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn file_bytes(dir: &std::path::Path) -> Vec<u8> {
    qlog_files(dir).values().flatten().flat_map(|p| std::fs::read(p).unwrap()).collect()
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_queues_keep_no_plaintext_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let env = [("QUEEN_ENCRYPTION_KEY", KEY)];
    let mut node = Node::start(&dir, &env).await;
    let (status, body) =
        node.post("/api/v1/configure", &json!({"queue": "vault", "options": {"encryptionEnabled": true}})).await;
    assert_eq!(status, 200, "{body}");
    let items = vec![
        ("vault".to_string(), "p".to_string(), "t1".to_string(), json!({"card": "SECRET-4111-HTTP"})),
        ("open".to_string(), "p".to_string(), "t2".to_string(), json!({"card": "PLAIN-VISIBLE"})),
    ];
    assert_eq!(node.post("/api/v1/push", &push_body(&items)).await.0, 201);

    // Kafka produce to the sealed queue is sealed too: the topic is the queue.
    let (status, _) =
        node.post("/api/v1/configure", &json!({"queue": "vault-k", "options": {"encryptionEnabled": true}})).await;
    assert_eq!(status, 200);
    let mut kafka = KafkaConn::connect(node.kafka_port).await;
    let (status, _) =
        node.post("/api/v1/push", &push_body(&[("vault-k".into(), "0".into(), "seed".into(), json!("seed"))])).await;
    assert_eq!(status, 201);
    let data = PartitionProduceData::default().with_index(0).with_records(Some(batch(
        -1,
        -1,
        -1,
        &["SECRET-4111-KAFKA".to_string()],
    )));
    let topic = TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_static_str("vault-k")))
        .with_partition_data(vec![data]);
    let request = ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_topic_data(vec![topic]);
    let ResponseKind::Produce(r) = kafka.call(ApiKey::Produce, 9, RequestKind::Produce(request)).await else {
        panic!("not a produce answer")
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);

    // A timer aimed at the sealed queue waits sealed and fires sealed.
    let secret = base64_of(br#"{"card":"SECRET-4111-TIMER"}"#);
    let (status, body) = node
        .post(
            "/api/v1/timers",
            &json!({"operations": [{"op": "schedule", "queue": "vault", "timerKey": "t", "partition": "p", "delayMs": 300, "payload": secret}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let r = node.http.get(node.url("/api/v1/timers/vault/t")).send().await.unwrap();
    let waiting: serde_json::Value = r.json().await.unwrap();
    assert_eq!(waiting["payload"], json!(secret), "a waiting timer reads back as scheduled: {waiting}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while node.read_all("vault", "p").await.records.len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    node.terminate();
    let disk = file_bytes(&dir);
    let store = std::fs::read(dir.join("store").join("data.mdb")).unwrap_or_default();
    assert!(
        !contains(&disk, "SECRET-4111-TIMER") && !contains(&store, "SECRET-4111-TIMER"),
        "a timer's payload leaked"
    );
    assert!(contains(&disk, "PLAIN-VISIBLE"), "the control: an open queue's payload is on disk as sent");
    assert!(!contains(&disk, "SECRET-4111-HTTP"), "a sealed HTTP payload reached the disk in plaintext");
    assert!(!contains(&disk, "SECRET-4111-KAFKA"), "a sealed Kafka record reached the disk in plaintext");

    let node = node.restart().await;
    let read = node.read_all("vault", "p").await;
    assert_eq!(read.records[0].2, json!({"card": "SECRET-4111-HTTP"}));
    assert_eq!(read.records[1].2, json!({"card": "SECRET-4111-TIMER"}), "the fired timer opens like any message");
    let read = node.read_all("vault-k", "0").await;
    assert_eq!(read.records[1].2, json!("SECRET-4111-KAFKA"));
    drop(node);

    // Without the key, the node will not serve a sealed queue it cannot read.
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("FATAL queue \"vault\" is configured with encryptionEnabled"), "{log}");
    let log = expect_refusal(&dir, &[("QUEEN_ENCRYPTION_KEY", "short")]);
    assert!(log.contains("FATAL QUEEN_ENCRYPTION_KEY must be 64 hexadecimal characters"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_a_key_refuses_to_configure_encryption() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let (status, body) =
        node.post("/api/v1/configure", &json!({"queue": "vault", "options": {"encryption_enabled": true}})).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("encryption_unavailable")), "{body}");
}
