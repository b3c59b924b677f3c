//! Each "Refused at boot" case of storage.md: a data directory damaged that
//! way makes the node refuse with a FATAL line naming the case and the file.
//! A torn active tail, by contrast, is cut and the node boots.

mod common;

use common::{expect_refusal, push_body, qlog_files, Node};
use queen::seams::qlog::{read_frame, Frame, RecordKind};
use serde_json::json;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

async fn push_n(node: &Node, queue: &str, n: usize, pad: usize) {
    for i in 0..n {
        let items = vec![(
            queue.to_string(),
            "Default".to_string(),
            format!("{queue}-{i}"),
            json!({"i": i, "pad": "z".repeat(pad)}),
        )];
        let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
        assert_eq!(status, 201, "{body}");
    }
}

fn flip(path: &Path, pos: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[pos] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

/// The frames of a qlog file: (position, body).
fn frames(path: &Path) -> Vec<(usize, Vec<u8>)> {
    let buf = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    while let Frame::Valid { body, next } = read_frame(&buf, pos) {
        out.push((pos, body.to_vec()));
        pos = next;
    }
    out
}

fn active_file(dir: &Path, log: &str) -> PathBuf {
    qlog_files(dir)[log].last().unwrap().clone()
}

#[tokio::test]
async fn a_sealed_file_with_a_bad_checksum_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let env = [("QUEEN_RAFT_SEGMENT_BYTES", "4096")];
    let mut node = Node::start(&dir, &env).await;
    push_n(&node, "sealed", 60, 200).await;
    node.terminate();
    let files = &qlog_files(&dir)["q1"];
    assert!(files.len() > 2, "the pushes should have rolled several files");
    flip(&files[0], 40);
    let log = expect_refusal(&dir, &env);
    assert!(log.contains("FATAL sealed qlog file"), "{log}");
    assert!(log.contains(files[0].to_str().unwrap()), "the FATAL line names the file: {log}");

    // The same without the .qidx: the rebuild scan finds it too.
    std::fs::remove_file(files[0].with_extension("qidx")).unwrap();
    let log = expect_refusal(&dir, &env);
    assert!(log.contains("FATAL sealed qlog file"), "{log}");
}

#[tokio::test]
async fn damage_in_the_active_file_before_a_durable_record_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    push_n(&node, "active", 10, 10).await;
    // A graceful stop checkpoints, so the store counts every record as durable.
    node.terminate();
    let file = active_file(&dir, "q1");
    flip(&file, 30);
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("FATAL active qlog file"), "{log}");
    assert!(log.contains("already counts as durable"), "{log}");
    assert!(log.contains(file.to_str().unwrap()), "{log}");
}

#[tokio::test]
async fn logs_that_end_before_the_durable_index_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    push_n(&node, "short", 10, 10).await;
    node.terminate();
    let file = active_file(&dir, "q1");
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(frames(&file)[3].0 as u64).unwrap();
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("FATAL the queue logs under"), "{log}");
    // Entry 1 is the effect catalogue a node raises at its first boot; ten pushes follow.
    assert!(log.contains("before entry 11 that the store recorded as durable"), "{log}");
}

#[tokio::test]
async fn one_queue_log_that_ends_before_its_durable_offset_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    push_n(&node, "first", 5, 10).await;
    push_n(&node, "second", 5, 10).await;
    node.terminate();
    // The first queue's log loses its tail while the second's still reaches
    // the durable index.
    let file = active_file(&dir, "q1");
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(frames(&file)[4].0 as u64).unwrap();
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("FATAL queue log"), "{log}");
    assert!(log.contains("of partition Default of queue first"), "{log}");
    assert!(log.contains(dir.join("qlog/q1").to_str().unwrap()), "{log}");
}

#[tokio::test]
async fn copies_of_an_entry_that_disagree_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // No checkpoint before the kill, so the entry is replayed and judged.
    let env = [("QUEEN_RAFT_DURABLE_EVERY_MS", "3600000")];
    let mut node = Node::start(&dir, &env).await;
    let items: Vec<_> =
        ["left", "right"].iter().map(|q| (q.to_string(), "Default".to_string(), format!("{q}-0"), json!(1))).collect();
    let (status, _) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!(status, 201);
    node.kill9();
    // Rewrite the stub in the second log with a different digest and a
    // checksum that verifies: present, but not identical.
    let file = active_file(&dir, "q2");
    let mut bytes = std::fs::read(&file).unwrap();
    let (pos, mut body) = frames(&file).into_iter().find(|(_, b)| b[0] == RecordKind::Stub as u8).unwrap();
    body[40] ^= 1;
    bytes[pos + 4..pos + 12].copy_from_slice(&xxh3_64(&body).to_le_bytes());
    bytes[pos + 12..pos + 12 + body.len()].copy_from_slice(&body);
    std::fs::write(&file, bytes).unwrap();
    let log = expect_refusal(&dir, &env);
    // Entry 1 is the effect catalogue a node raises at its first boot.
    assert!(log.contains("FATAL the copies of entry 2 disagree across logs"), "{log}");
    assert!(log.contains(dir.join("qlog/q2").to_str().unwrap()), "{log}");
}

#[tokio::test]
async fn a_store_value_that_fails_its_checksum_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    let items = vec![("store-damage".to_string(), "partition-name-to-damage".to_string(), "t".to_string(), json!(1))];
    let (status, _) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!(status, 201);
    node.terminate();
    let mdb = dir.join("store/data.mdb");
    let mut bytes = std::fs::read(&mdb).unwrap();
    let needle = b"partition-name-to-damage";
    let mut hits = 0;
    for i in 0..bytes.len() - needle.len() {
        if &bytes[i..i + needle.len()] == needle {
            bytes[i] = b'P';
            hits += 1;
        }
    }
    assert!(hits > 0, "the partition row is in data.mdb");
    std::fs::write(&mdb, bytes).unwrap();
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("FATAL store value fails its checksum: keyspace partitions"), "{log}");
    assert!(log.contains(mdb.to_str().unwrap()), "{log}");
}

#[tokio::test]
async fn a_directory_of_another_replicator_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    node.terminate();
    std::fs::write(dir.join("qlog/REPLICATOR"), "openraft\n").unwrap();
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("written by the openraft replicator"), "{log}");
}

/// `QUEEN_RAFT_GROUPS` is fixed when the directory is founded: a directory
/// that names another number of groups (one founded by a build that runs
/// several) is refused naming both, one without `GROUPS` (founded before the
/// file existed) boots as one group, and a number this build does not run is
/// refused before anything is opened.
#[tokio::test]
async fn a_directory_founded_with_other_raft_groups_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    push_n(&node, "g", 3, 0).await;
    node.terminate();
    assert_eq!(std::fs::read_to_string(dir.join("qlog/GROUPS")).unwrap(), "1\n");

    std::fs::remove_file(dir.join("qlog/GROUPS")).unwrap();
    let mut node = Node::start(&dir, &[]).await;
    assert_eq!(node.read_all("g", "Default").await.records.len(), 3);
    node.terminate();

    std::fs::write(dir.join("qlog/GROUPS"), "4\n").unwrap();
    let log = expect_refusal(&dir, &[]);
    assert!(
        log.contains("founded with QUEEN_RAFT_GROUPS=4 and this node was started with QUEEN_RAFT_GROUPS=1"),
        "{log}"
    );

    let log = expect_refusal(&tmp.path().join("fresh"), &[("QUEEN_RAFT_GROUPS", "4")]);
    assert!(log.contains("QUEEN_RAFT_GROUPS=4 needs a cluster"), "{log}");
    assert!(!tmp.path().join("fresh/qlog").exists(), "a refused boot founded nothing");
    let log = expect_refusal(&tmp.path().join("fresh"), &[("QUEEN_RAFT_GROUPS", "0")]);
    assert!(log.contains("QUEEN_RAFT_GROUPS=0 is not between 1 and 64"), "{log}");
}

#[tokio::test]
async fn a_directory_of_an_earlier_format_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    node.terminate();
    std::fs::remove_file(dir.join("qlog/FORMAT")).unwrap();
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("holds on-disk format 1 (no FORMAT file) and this build reads format 5"), "{log}");
}

#[tokio::test]
async fn a_torn_active_tail_is_cut_not_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = Node::start(&dir, &[]).await;
    push_n(&node, "torn", 10, 10).await;
    node.kill9();
    let file = active_file(&dir, "q1");
    let clean = std::fs::metadata(&file).unwrap().len();
    // Half a record: a length that runs past the end, then a few bytes.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(&200u32.to_le_bytes());
    bytes.extend_from_slice(&[0xab; 17]);
    std::fs::write(&file, bytes).unwrap();
    let node = node.restart().await;
    let read = node.read_all("torn", "Default").await;
    assert_eq!(read.records.len(), 10);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), clean, "the torn tail was cut");
    assert!(node.log_text().contains("cut the qlog"), "{}", node.log_text());
    let items = vec![("torn".to_string(), "Default".to_string(), "after-the-cut".to_string(), json!(1))];
    let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!((status, body[0]["offset"].as_u64()), (201, Some(10)), "the log continues where the cut left it");
    assert_eq!(node.read_all("torn", "Default").await.records.len(), 11);
}

#[tokio::test]
async fn jwt_enabled_without_a_key_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let log = expect_refusal(&dir, &[("JWT_ENABLED", "true"), ("JWT_ALGORITHM", "HS256")]);
    assert!(log.contains("FATAL JWT_ENABLED=true with JWT_ALGORITHM=HS256: that algorithm needs JWT_SECRET"), "{log}");
}

#[tokio::test]
async fn kafka_misconfiguration_is_refused_with_the_setting_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let http_open = ("QUEEN_HTTP_AUTH", "open");
    let log = expect_refusal(
        &dir,
        &[("QUEEN_KAFKA_SASL_MECHANISMS", "GSSAPI"), ("QUEEN_KAFKA_SASL_USERS", "a:b"), http_open],
    );
    assert!(log.contains("FATAL QUEEN_KAFKA_SASL_MECHANISMS: unknown mechanism \"GSSAPI\""), "{log}");
    let log = expect_refusal(&dir, &[("QUEEN_KAFKA_SASL_MECHANISMS", "PLAIN"), http_open]);
    assert!(
        log.contains(
            "FATAL QUEEN_KAFKA_SASL_MECHANISMS names a password mechanism but QUEEN_KAFKA_SASL_USERS names no user"
        ),
        "{log}"
    );
    let log = expect_refusal(&dir, &[("QUEEN_KAFKA_SASL_MECHANISMS", "OAUTHBEARER"), http_open]);
    assert!(log.contains("FATAL QUEEN_KAFKA_SASL_MECHANISMS names OAUTHBEARER"), "{log}");
    let log = expect_refusal(&dir, &[("QUEEN_KAFKA_ADVERTISED", "no-port")]);
    assert!(log.contains("FATAL QUEEN_KAFKA_ADVERTISED=\"no-port\" is not host:port"), "{log}");
    // The Kafka port is taken: the FATAL line names the address.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let log = expect_refusal(&dir, &[("QUEEN_KAFKA_ADDR", addr.as_str())]);
    assert!(log.contains(&format!("FATAL Kafka listener on {addr}")), "{log}");
}

/// One node, one authentication policy: Kafka protected by SASL while HTTP
/// is open is refused with a FATAL line naming both, unless
/// QUEEN_HTTP_AUTH=open states it; and the boot log states each listener's
/// authentication.
#[tokio::test]
async fn a_half_protected_node_is_refused_unless_the_open_side_is_stated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let sasl = [("QUEEN_KAFKA_SASL_MECHANISMS", "SCRAM-SHA-256"), ("QUEEN_KAFKA_SASL_USERS", "alice:alice-secret")];
    let log = expect_refusal(&dir, &sasl);
    assert!(
        log.contains("FATAL the Kafka listener requires SASL (QUEEN_KAFKA_SASL_MECHANISMS=SCRAM-SHA-256) while HTTP is open (JWT_ENABLED=false)"),
        "{log}"
    );
    assert!(log.contains("QUEEN_HTTP_AUTH=open"), "the FATAL line names the way out; {log}");
    let jwt = [("JWT_ENABLED", "true"), ("JWT_SECRET", "s")];
    let log = expect_refusal(&dir, &[jwt[0], jwt[1], ("QUEEN_HTTP_AUTH", "open")]);
    assert!(log.contains("FATAL QUEEN_HTTP_AUTH=open contradicts JWT_ENABLED=true"), "{log}");
    let log = expect_refusal(&dir, &[jwt[0], jwt[1], sasl[0], sasl[1], ("QUEEN_KAFKA_AUTH", "open")]);
    assert!(log.contains("FATAL QUEEN_KAFKA_AUTH=open contradicts QUEEN_KAFKA_SASL_MECHANISMS"), "{log}");

    let node = Node::start(&dir, &[sasl[0], sasl[1], ("QUEEN_HTTP_AUTH", "open")]).await;
    let log = node.log_text();
    assert!(log.contains("HTTP listener authentication: none, open on purpose (QUEEN_HTTP_AUTH=open)"), "{log}");
    assert!(log.contains("Kafka listener authentication: SASL SCRAM-SHA-256, required"), "{log}");
    drop(node);
    let node = Node::start(&dir, &[jwt[0], jwt[1], sasl[0], sasl[1]]).await;
    let log = node.log_text();
    assert!(log.contains("HTTP listener authentication: JWT bearer tokens (JWT_ENABLED=true)"), "{log}");
    assert!(log.contains("Kafka listener authentication: SASL SCRAM-SHA-256, OAUTHBEARER, required"), "{log}");
}

#[tokio::test]
async fn a_second_process_on_one_data_directory_is_refused_and_names_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut first = Node::start(&dir, &[]).await;
    push_n(&first, "locked", 3, 10).await;
    let log = expect_refusal(&dir, &[]);
    assert!(log.contains("FATAL data directory"), "{log}");
    assert!(log.contains(dir.to_str().unwrap()), "the FATAL line names the directory: {log}");
    assert!(log.contains(&format!("pid {}", first.pid())), "the FATAL line names the holder's pid: {log}");

    // The first node served on, untouched, and a kill -9 leaves no stale lock.
    push_n(&first, "locked", 1, 10).await;
    first.kill9();
    let node = first.restart().await;
    push_n(&node, "locked", 1, 10).await;
}
