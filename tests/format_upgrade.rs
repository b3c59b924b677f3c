//! A data directory of on-disk format 3 is upgraded at boot to format 4.
//!
//! `tests/fixtures/format3.tar.gz` was written by the build before format 4
//! (commit bda1035): 24 pushes of two messages each, to queue `orders`
//! (partitions p0-p2, transactionIds tx-1..tx-24) and queue `audit`, with
//! 4 KiB segments so `orders` rolled and sealed a file, a KV row `app/color`
//! = "blue", and a kill -9 after the last pushes, so the boot replays format
//! 3 entry records past the checkpoint.

mod common;

use common::Node;
use serde_json::{json, Value};
use std::path::Path;

fn unpack_fixture(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format3.tar.gz");
    let status = std::process::Command::new("tar").arg("-xzf").arg(&fixture).arg("-C").arg(dir).status().unwrap();
    assert!(status.success(), "unpack {}", fixture.display());
}

#[tokio::test]
async fn a_format_3_directory_is_upgraded_at_boot_and_keeps_every_message_and_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    unpack_fixture(&dir);
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "3\n");

    let node = Node::start(&dir, &[("QUEEN_RAFT_SEGMENT_BYTES", "4096")]).await;
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "4\n", "FORMAT is rewritten");
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
    assert_eq!(std::fs::read_to_string(dir.join("qlog/FORMAT")).unwrap(), "4\n");
}
