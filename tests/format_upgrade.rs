//! Data directories of on-disk formats 3 and 4 are upgraded at boot to
//! format 5.
//!
//! `tests/fixtures/format3.tar.gz` was written by the build before format 4
//! (commit bda1035): 24 pushes of two messages each, to queue `orders`
//! (partitions p0-p2, transactionIds tx-1..tx-24) and queue `audit`, with
//! 4 KiB segments so `orders` rolled and sealed a file, a KV row `app/color`
//! = "blue", and a kill -9 after the last pushes, so the boot replays format
//! 3 entry records past the checkpoint.

mod common;

use common::kafka::{batch, fetch, produce, produced, KafkaConn};
use common::{expect_refusal, Node};
use protocol::messages::{ApiKey, ResponseKind};
use serde_json::{json, Value};
use std::path::Path;

fn unpack_fixture(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let status = std::process::Command::new("tar").arg("-xzf").arg(&fixture).arg("-C").arg(dir).status().unwrap();
    assert!(status.success(), "unpack {}", fixture.display());
}

#[tokio::test]
async fn a_format_3_directory_is_upgraded_at_boot_and_keeps_every_message_and_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    unpack_fixture(&dir, "format3.tar.gz");
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "3\n");

    // A dedup window longer than the fixture's age: its rows are in it.
    let window = ("QUEEN_RAFT_TXN_WINDOW_MIN_S", "315360000");
    let node = Node::start(&dir, &[("QUEEN_RAFT_SEGMENT_BYTES", "4096"), window]).await;
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "5\n", "FORMAT is rewritten");
    assert!(node.log_text().contains("upgraded the data directory's on-disk format"), "{}", node.log_text());

    for (partition, first) in [("p1", 1), ("p2", 2), ("p0", 3)] {
        let read = node.read_all("orders", partition).await;
        let ids: Vec<String> = read.records.iter().map(|r| r.1.clone()).collect();
        let wanted: Vec<String> = (0..8).map(|i| format!("tx-{}", first + 3 * i)).collect();
        assert_eq!(ids, wanted, "partition {partition} of orders");
        let offsets: Vec<u64> = read.records.iter().map(|r| r.0).collect();
        assert_eq!(offsets, (0..8).collect::<Vec<_>>(), "gapless offsets in {partition}");
        assert_eq!(read.records[0].2["n"], json!(first), "the payload");
    }
    assert_eq!(node.read_all("audit", "Default").await.records.len(), 24);

    let color: Value = reqwest::get(node.url("/api/v1/kv/app/color")).await.unwrap().json().await.unwrap();
    assert_eq!(color["value"], json!("blue"), "{color}");

    // Dedup rows written by format 3 still answer the original offset.
    let retry =
        json!({"items": [{"queue": "orders", "partition": "p2", "payload": {"n": 5}, "transactionId": "tx-5"}]});
    let (status, body) = node.post("/api/v1/push", &retry).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!((body[0]["status"].as_str(), body[0]["offset"].as_u64()), (Some("duplicate"), Some(1)), "{body}");

    // New writes are format 4 records after the format 3 ones, and both
    // read back after a crash.
    let fresh =
        json!({"items": [{"queue": "orders", "partition": "p2", "payload": {"n": 25}, "transactionId": "tx-25"}]});
    let (status, body) = node.post("/api/v1/push", &fresh).await;
    assert_eq!((status, body[0]["offset"].as_u64()), (201, Some(8)), "{body}");
    let mut node = node;
    node.kill9();
    let node = node.restart().await;
    let read = node.read_all("orders", "p2").await;
    assert_eq!(read.records.len(), 9);
    assert_eq!(read.records[8].1, "tx-25");
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "5\n");
}

/// The Kafka records and HTTP messages of one partition, read over Kafka:
/// (offset, value) from offset 0.
async fn kafka_read(conn: &mut KafkaConn, topic: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    loop {
        let answer = conn.call(ApiKey::Fetch, 12, fetch(topic, 0, out.len() as i64, 0, 0)).await;
        let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer: {answer:?}") };
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        let records = protocol::records::decode_fetched(p.records.clone().unwrap_or_default()).unwrap();
        let next: Vec<_> = records.into_iter().filter(|(o, _)| *o >= out.len() as i64).collect();
        if next.is_empty() {
            return out;
        }
        out.extend(next.into_iter().map(|(o, r)| (o, r.value.unwrap_or_default().to_vec())));
    }
}

/// `tests/fixtures/format4.tar.gz` was written by the build before format 5
/// (commit 8330170) with 4 KiB segments: on queue `mixed`, partition `0`,
/// ten HTTP pushes (transactionIds http-0..http-9, payload {"n": i}), each
/// followed by three zstd-compressed records from confluent-kafka (key
/// `k{i}`, value `kafka-{i}-{j}` twenty times, two headers named `h`),
/// then a kill -9.
#[tokio::test]
async fn a_format_4_directory_of_kafka_records_is_upgraded_at_boot_and_reads_back_over_both_protocols() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    unpack_fixture(&dir, "format4.tar.gz");
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "4\n");
    let node = Node::start(&dir, &[("QUEEN_RAFT_SEGMENT_BYTES", "4096")]).await;
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "5\n", "FORMAT is rewritten");

    let wanted = |i: usize, j: usize| format!("kafka-{i}-{j}").repeat(20).into_bytes();
    let read = node.read_all("mixed", "0").await;
    assert_eq!(read.records.len(), 40);
    for (i, chunk) in read.records.chunks(4).enumerate() {
        assert_eq!((chunk[0].1.as_str(), &chunk[0].2), (format!("http-{i}").as_str(), &json!({"n": i})));
        for j in 0..3 {
            assert_eq!(chunk[1 + j].2, json!(String::from_utf8(wanted(i, j)).unwrap()), "offset {}", chunk[1 + j].0);
        }
    }
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let records = kafka_read(&mut conn, "mixed").await;
    assert_eq!(records.iter().map(|r| r.0).collect::<Vec<_>>(), (0..40).collect::<Vec<_>>());
    assert_eq!(records[5].1, wanted(1, 0));

    // A batch produced now is stored as it came, after the format 4
    // records, and every one reads back after a crash.
    let answer = conn.call(ApiKey::Produce, 9, produce("mixed", 0, batch(-1, -1, -1, &["after".to_string()]))).await;
    assert_eq!(produced(answer), (0, 40));
    let mut node = node;
    node.kill9();
    let node = node.restart().await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let records = kafka_read(&mut conn, "mixed").await;
    assert_eq!(records.len(), 41);
    assert_eq!(records[40].1, b"after");
    assert_eq!(node.read_all("mixed", "0").await.records.len(), 41);
}

/// An idempotent producer that wrote before effect catalogue 5 keeps its
/// retries answered after the upgrade. Before catalogue 5 every Kafka
/// record had a dedup row; a build writing catalogue 4 is rehearsed with
/// QUEEN_TEST_EFFECT_CATALOGUE=4 (a directory the previous release wrote
/// reads the same: it has no catalogue row, which is catalogue 1). This
/// build raises the directory to 5 at boot: a retry of a batch from before
/// answers its offset by the old rows, the batch after it is written with
/// no row, and from then on a build that reads only 4 refuses the directory.
#[tokio::test]
async fn an_idempotent_producer_active_before_catalogue_5_keeps_its_retries_answered_after_the_upgrade() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let values = |from: usize| (from..from + 3).map(|i| format!("r{i}")).collect::<Vec<_>>();
    let dedup_rows = "queen_store_rows{group=\"0\",keyspace=\"dedup\"}";

    let mut node = Node::start(&dir, &[("QUEEN_TEST_EFFECT_CATALOGUE", "4")]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    for (seq, offset) in [(0, 0), (3, 3)] {
        let answer = conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(77, 0, seq, &values(seq as usize)))).await;
        assert_eq!(produced(answer), (0, offset));
    }
    assert_eq!(node.counter(dedup_rows).await, 6, "catalogue 4 keeps a dedup row per Kafka record");
    node.terminate();

    let node = Node::start(&dir, &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let retry = conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(77, 0, 3, &values(3)))).await;
    assert_eq!(produced(retry), (0, 3), "a retry of a batch written before the upgrade answers its offset");
    let next = conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(77, 0, 6, &values(6)))).await;
    assert_eq!(produced(next), (0, 6), "the batch after it follows the old rows");
    let again = conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(77, 0, 6, &values(6)))).await;
    assert_eq!(produced(again), (0, 6), "and its own retry is answered by the producer's state");
    assert_eq!(node.counter(dedup_rows).await, 6, "no dedup row for a record written at catalogue 5");
    let mut node = node;
    node.terminate();

    let refusal = expect_refusal(&dir, &[("QUEEN_TEST_EFFECT_CATALOGUE", "4")]);
    let line = "this build reads effect catalogue version 4, and the cluster this store belongs to writes version 5";
    assert!(refusal.contains(line), "{refusal}");
}
