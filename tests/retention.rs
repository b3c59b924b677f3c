//! Retention and reclaim on a real node: messages older than a queue's
//! `retentionSeconds` leave the log (a fetch below the new log start answers
//! OFFSET_OUT_OF_RANGE with it), the sealed files that held only them are
//! unlinked, a queue without retention keeps everything, and a kill -9
//! followed by a restart boots on the reclaimed directory with the offsets
//! going on where they were; and kill -9 at random moments while retention
//! frees files loses no acknowledged message above the log start. And
//! `/metrics` counts the store's rows per keyspace, the dedup rows and
//! locator spans among them, which grow with the messages a queue keeps.

mod common;

use common::crash::{kill_rounds, push_until_killed, Ledger, Rounds};
use common::{push_body, qlog_files, Node};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn push(node: &Node, queue: &str, from: usize, count: usize) {
    let payload = json!({"pad": "x".repeat(300)});
    let items: Vec<_> = (from..from + count)
        .map(|i| (queue.to_string(), "p".to_string(), format!("{queue}-{i}"), payload.clone()))
        .collect();
    let (status, body) = node.post("/api/v1/push", &push_body(&items)).await;
    assert_eq!(status, 201, "push failed: {body}");
}

/// `rounds` rounds, each pushing `count` messages to each `(queue, count)`
/// in turn, every queue's transactionIds numbered from 0.
async fn push_rounds(node: &Node, rounds: usize, queues: &[(&str, usize)]) {
    for round in 0..rounds {
        for (queue, count) in queues {
            push(node, queue, round * count, *count).await;
        }
    }
}

/// The fetch answer's entry for offset `offset` of partition "p".
async fn fetch(node: &Node, queue: &str, offset: u64) -> Value {
    let ask = json!({"entries": [{"queue": queue, "partition": "p", "offset": offset}]});
    let (status, body) = node.post("/api/v1/fetch", &ask).await;
    assert_eq!(status, 200, "fetch failed: {body}");
    body["entries"][0].clone()
}

/// A node on `dir` that checkpoints every 100 ms and keeps no hashes past
/// their payloads (so reclaim may free files within a test), with `env`
/// added, and `queue` configured to keep its messages for `seconds`.
async fn start_expiring(dir: &Path, env: &[(&str, &str)], queue: &str, seconds: u64) -> Node {
    let mut all = vec![("QUEEN_RAFT_DURABLE_EVERY_MS", "100"), ("QUEEN_RAFT_TXN_WINDOW_MIN_S", "0")];
    all.extend_from_slice(env);
    let node = Node::start(dir, &all).await;
    let options = json!({"queue": queue, "options": {"retentionSeconds": seconds}});
    let (status, body) = node.post("/api/v1/configure", &options).await;
    assert_eq!(status, 200, "{body}");
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_messages_leave_the_log_and_their_files_are_freed_across_a_kill9() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node =
        start_expiring(&dir, &[("QUEEN_RAFT_SEGMENT_BYTES", "8192"), ("QUEEN_QLOG_SEAL_AGE_S", "1")], "short", 2).await;
    // Queue ids follow creation: "short" logs to q1, "kept" to q2.
    push_rounds(&node, 20, &[("short", 10), ("kept", 5)]).await;
    let before = qlog_files(&dir);
    assert!(before["q1"].len() >= 5, "200 messages of 300 bytes roll 8 KiB files: {:?}", before["q1"]);

    // Past the retention and the seal age, with no write since: the idle
    // log's active file is sealed, and every file that held its messages is
    // unlinked, leaving only the new, empty, active file.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let entry = loop {
        let entry = fetch(&node, "short", 0).await;
        let files = qlog_files(&dir);
        if entry["logStartOffset"].as_u64().unwrap() >= 200 && files["q1"].len() == 1 {
            break entry;
        }
        assert!(
            Instant::now() < deadline,
            "retention did not move the log start and free the files: {entry}, {files:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(entry["error"], json!("OFFSET_OUT_OF_RANGE"));
    assert_eq!(entry["highWatermark"], json!(200));
    let sealed_old = &before["q1"];
    let active = &qlog_files(&dir)["q1"][0];
    assert!(!sealed_old.contains(active), "the idle log's active file was sealed and freed: {active:?}");
    assert_eq!(std::fs::metadata(active).unwrap().len(), 0);
    push(&node, "short", 200, 30).await;
    let after = qlog_files(&dir);
    assert!(
        before["q2"].iter().all(|f| after["q2"].contains(f)),
        "a queue without retention keeps its files: {:?}, then {:?}",
        before["q2"],
        after["q2"]
    );
    // The counters move when the pass that unlinked the files ends.
    let unlinked = loop {
        let unlinked = node.counter("queen_qlog_files_reclaimed_total").await;
        if unlinked >= sealed_old.len() as u64 || Instant::now() > deadline {
            break unlinked;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(unlinked >= sealed_old.len() as u64, "{unlinked} files counted, {} unlinked", sealed_old.len());
    assert!(node.counter("queen_partitions_retained_total").await >= 1);
    let kept = node.read_all("kept", "p").await;
    assert_eq!(kept.records.iter().map(|r| r.0).collect::<Vec<_>>(), (0..100).collect::<Vec<u64>>());

    node.kill9();
    let node = node.restart().await;
    let entry = fetch(&node, "short", 0).await;
    assert!(entry["logStartOffset"].as_u64().unwrap() >= 200, "the log start survives the restart: {entry}");
    assert_eq!(entry["highWatermark"], json!(230));
    push(&node, "short", 230, 1).await;
    let last = fetch(&node, "short", 230).await;
    assert_eq!(last["records"][0]["transactionId"], json!("short-230"), "offsets go on where they were: {last}");
    assert_eq!(node.read_all("kept", "p").await.records.len(), 100);
}

/// Where a message was acknowledged: (queue, offset), by transactionId.
type At = (String, u64);

const EXPIRING: &str = "expiring";
const KEPT: &str = "kept";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_while_retention_frees_files_loses_nothing_above_the_log_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let node = start_expiring(&dir, &[("QUEEN_RAFT_SEGMENT_BYTES", "4096")], EXPIRING, 3).await;
    // Every boot runs a retention round and a reclaim pass at once, so
    // rounds of a few seconds kill the node around its reclaims.
    let rounds = Rounds { kills: 6, writers: 4, pause_ms: 2000..4000, seed: 11 };
    let writer =
        |node: &Node, ledger, round, w| tokio::spawn(write_until_killed(node.url("/api/v1/push"), ledger, round, w));
    let (node, ledger) = kill_rounds(node, rounds, writer, verify).await;
    let kept = ledger.acked.values().filter(|at| at.0 == KEPT).count();
    assert!(kept > 100, "the writers got too few acknowledgements to mean anything: {kept}");
    assert!(!dir.join("qlog/q1/r00000001.qlog").exists(), "reclaim freed the expiring queue's first file");
    drop(node);
}

/// Pushes one to three messages at a time, all to one of the two queues,
/// until the node dies under it.
async fn write_until_killed(url: String, ledger: Arc<Mutex<Ledger<At>>>, round: usize, writer: usize) {
    let client = reqwest::Client::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64((round * 100 + writer) as u64);
    for seq in 0.. {
        let queue = if rng.gen_bool(0.5) { EXPIRING } else { KEPT };
        let items: Vec<(String, String, String, Value)> = (0..rng.gen_range(1..=3))
            .map(|i| {
                let t = format!("r{round}-w{writer}-s{seq}-i{i}");
                (queue.to_string(), "p".to_string(), t, json!({"pad": "x".repeat(300)}))
            })
            .collect();
        let answer = push_until_killed(&client, &url, &items).await;
        let mut l = ledger.lock().unwrap();
        let Some(results) = answer else {
            l.unanswered.push(items.iter().map(|i| i.2.clone()).collect());
            return;
        };
        for (item, r) in items.iter().zip(results) {
            l.acked.insert(item.2.clone(), (queue.to_string(), r["offset"].as_u64().unwrap()));
        }
    }
}

/// The kept queue holds every acknowledged message at its offset, gapless,
/// and every unanswered push wholly or not at all; the expiring queue holds
/// every acknowledged message at or above its log start, gapless from there.
async fn verify(node: &Node, ledger: &Ledger<At>) {
    let mut found: HashMap<String, At> = HashMap::new();
    let mut expiring_start = 0;
    for queue in [KEPT, EXPIRING] {
        // Retention may move the log start while the read goes on: read
        // again from the new one.
        let read = loop {
            let start = node.read_from(queue, "p", 0).await.log_start;
            let read = node.read_from(queue, "p", start).await;
            if read.error.is_none() {
                break read;
            }
        };
        let offsets: Vec<u64> = read.records.iter().map(|r| r.0).collect();
        assert_eq!(offsets, (read.log_start..read.high_watermark).collect::<Vec<_>>(), "{queue} is gapless");
        if queue == EXPIRING {
            expiring_start = read.log_start;
        } else {
            assert_eq!(read.log_start, 0, "the kept queue has no retention");
        }
        for (offset, t, _) in read.records {
            assert!(found.insert(t, (queue.to_string(), offset)).is_none(), "a transactionId is stored twice");
        }
    }
    for (t, at) in &ledger.acked {
        if at.0 == KEPT || at.1 >= expiring_start {
            assert_eq!(found.get(t), Some(at), "acknowledged message {t} is not where it was acknowledged");
        }
    }
    for names in ledger.unanswered.iter().filter(|n| n.iter().any(|t| found.get(t).is_some_and(|at| at.0 == KEPT))) {
        assert!(names.iter().all(|t| found.contains_key(t)), "an unanswered push to the kept queue is partly stored");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_file_mostly_expired_is_rewritten_with_its_live_records() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node =
        start_expiring(&dir, &[("QUEEN_QLOG_SHARDS", "1"), ("QUEEN_RAFT_SEGMENT_BYTES", "16384")], "short", 1).await;
    // Both queues share log q0; the expiring one holds most of each file's bytes.
    push_rounds(&node, 10, &[("short", 6), ("kept", 2)]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    push(&node, "kept", 20, 30).await;
    let size = |f: &std::path::PathBuf| std::fs::metadata(f).map_or(0, |m| m.len());
    let sealed: Vec<(std::path::PathBuf, u64)> =
        qlog_files(&dir)["q0"].iter().rev().skip(1).map(|f| (f.clone(), size(f))).collect();

    let deadline = Instant::now() + Duration::from_secs(20);
    while node.counter("queen_qlog_files_rewritten_total").await == 0 {
        assert!(Instant::now() < deadline, "no file was rewritten");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let shrunk = sealed.iter().filter(|(f, was)| f.exists() && size(f) < *was).count();
    assert!(shrunk >= 1, "a sealed file is smaller than it was: {sealed:?}");
    let kept = node.read_all("kept", "p").await;
    assert_eq!(kept.records.iter().map(|r| r.0).collect::<Vec<_>>(), (0..50).collect::<Vec<u64>>());

    node.kill9();
    let node = node.restart().await;
    let kept = node.read_all("kept", "p").await;
    assert_eq!(kept.records.iter().map(|r| r.0).collect::<Vec<_>>(), (0..50).collect::<Vec<u64>>());
    assert_eq!(kept.records[7].1, "kept-7", "a moved record reads back as itself");
    assert!(fetch(&node, "short", 0).await["logStartOffset"].as_u64().unwrap() >= 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_whose_active_file_is_empty_keeps_the_file_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut node = start_expiring(&dir, &[], "short", 1).await;
    push(&node, "short", 0, 10).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while fetch(&node, "short", 0).await["logStartOffset"] != json!(10) {
        assert!(Instant::now() < deadline, "retention did not move the log start");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The newest entry, that Retain, is in the system log's active file. A
    // crash right after a roll leaves an empty file after it, as this does.
    node.terminate();
    let newest = qlog_files(&dir)["q0"].last().unwrap().clone();
    let number: u32 = newest.file_stem().unwrap().to_str().unwrap()[1..].parse().unwrap();
    std::fs::File::create(dir.join(format!("qlog/q0/r{:08}.qlog", number + 1))).unwrap();
    let mut node = node.restart().await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    node.terminate();
    assert!(newest.exists(), "reclaim spared the file holding the newest entry");
    let node = node.restart().await;
    assert_eq!(fetch(&node, "short", 0).await["logStartOffset"], json!(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_partition_retention_emptied_is_deleted_and_its_name_starts_over() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // About 2.6 s of idleness.
    let env = [("PARTITION_CLEANUP_DAYS", "0.00003")];
    let node = start_expiring(&dir, &env, "tmp", 1).await;
    let options = json!({"queue": "topic", "options": {"retentionSeconds": 1}});
    assert_eq!(node.post("/api/v1/configure", &options).await.0, 200);
    let push_to = |queue: &str, partition: &str, id: &str| json!({"items": [{"queue": queue, "partition": partition, "transactionId": id, "payload": {"n": id}}]});
    // "topic" has a partition named by a Kafka number: none of its
    // partitions is ever cleaned up.
    for (queue, partition) in [("tmp", "a"), ("topic", "0"), ("topic", "b")] {
        let (status, body) = node.post("/api/v1/push", &push_to(queue, partition, partition)).await;
        assert_eq!(status, 201, "{body}");
    }
    let fetch_at =
        |queue: &str, partition: &str| json!({"entries": [{"queue": queue, "partition": partition, "offset": 0}]});
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = node.post("/api/v1/fetch", &fetch_at("tmp", "a")).await;
        if body["entries"][0]["error"] == json!("UNKNOWN_TOPIC_OR_PARTITION") {
            break;
        }
        assert!(Instant::now() < deadline, "partition a was not cleaned up: {body}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(node.counter("queen_partitions_cleaned_up_total").await >= 1);
    for partition in ["0", "b"] {
        let (_, kept) = node.post("/api/v1/fetch", &fetch_at("topic", partition)).await;
        let entry = &kept["entries"][0];
        assert_eq!(entry["error"], json!("OFFSET_OUT_OF_RANGE"), "partition {partition} is kept: {kept}");
        assert_eq!(entry["logStartOffset"], json!(1), "{kept}");
    }

    let (status, body) = node.post("/api/v1/push", &push_to("tmp", "a", "a")).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body[0]["offset"], json!(0), "a new partition a, from offset 0 (its hashes went with it): {body}");
    let mut node = node;
    node.kill9();
    let node = node.restart().await;
    let (_, body) = node.post("/api/v1/fetch", &fetch_at("tmp", "a")).await;
    assert_eq!(body["entries"][0]["records"][0]["transactionId"], json!("a"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_queues_log_directory_is_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let node = Node::start(&dir, &[("QUEEN_RAFT_DURABLE_EVERY_MS", "100"), ("QUEEN_RAFT_SEGMENT_BYTES", "8192")]).await;
    // "doomed" logs to q1, "kept" to q2.
    push_rounds(&node, 5, &[("doomed", 10), ("kept", 10)]).await;
    assert!(qlog_files(&dir)["q1"].len() >= 2, "{:?}", qlog_files(&dir));
    // What crashes can leave in a log directory: an index whose file an
    // unlink removed, a rewrite's copy.
    std::fs::write(dir.join("qlog/q1/r00000777.qidx"), b"stale").unwrap();
    std::fs::write(dir.join("qlog/q1/r00000001.qlog.rewrite"), b"partial").unwrap();
    let deleted = node.http.delete(node.url("/api/v1/resources/queues/doomed")).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    // The delete's entry record is in q1; the checkpoint's own entry is
    // kept, so a later write moves the checkpoint past it.
    push(&node, "kept", 50, 10).await;

    let deadline = Instant::now() + Duration::from_secs(30);
    while dir.join("qlog/q1").exists() {
        assert!(Instant::now() < deadline, "the deleted queue's log is still there: {:?}", qlog_files(&dir)["q1"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(node.read_all("kept", "p").await.records.len(), 60);
    push(&node, "doomed", 0, 1).await;
    assert!(dir.join("qlog/q3").exists(), "a queue of the same name is a new queue, with a log of its own");

    // A directory a crash left without a qlog file, leftovers in it, is
    // removed at boot.
    std::fs::create_dir(dir.join("qlog/q9")).unwrap();
    std::fs::write(dir.join("qlog/q9/r00000001.qidx"), b"stale").unwrap();
    let mut node = node;
    node.kill9();
    let node = node.restart().await;
    assert!(!dir.join("qlog/q9").exists());
    assert_eq!(node.read_all("kept", "p").await.records.len(), 60);
    assert_eq!(node.read_all("doomed", "p").await.records.len(), 1);
}

/// `/metrics` counts each keyspace's rows in RAM: a queue without retention
/// keeps a dedup row per message with a transactionId and a locator span per
/// push, which is how the growth with the messages stored shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_the_store_rows_of_each_keyspace() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(tmp.path(), &[]).await;
    for round in 0..5 {
        push(&node, "kept", round * 10, 10).await;
    }
    let rows = |keyspace: &'static str| {
        let node = &node;
        async move { node.counter(&format!("queen_store_rows{{group=\"0\",keyspace=\"{keyspace}\"}}")).await }
    };
    assert_eq!(rows("queues").await, 1);
    assert_eq!(rows("partitions").await, 1);
    assert_eq!(rows("dedup").await, 50, "a dedup row per message with a transactionId");
    assert_eq!(rows("locator_spans").await, 5, "a span per push");
}

/// The dedup window holds whether or not the payloads are kept: on a queue
/// that keeps its messages, a retry within `QUEEN_RAFT_TXN_WINDOW_MIN_S`
/// answers its original offset, the rows past it go (so RAM and the
/// checkpoint hold the window's pushes, not every push stored), a retry
/// after it is stored as new, and a message past the window is still
/// popped and acknowledged by its transactionId.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_rows_last_their_window_on_a_queue_that_keeps_its_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(tmp.path(), &[("QUEEN_RAFT_TXN_WINDOW_MIN_S", "2")]).await;
    push(&node, "kept", 0, 10).await;
    let retry = |id: &str| push_body(&[("kept".into(), "p".into(), id.into(), json!({"pad": "again"}))]);
    let (_, body) = node.post("/api/v1/push", &retry("kept-3")).await;
    assert_eq!((body[0]["status"].as_str(), body[0]["offset"].as_u64()), (Some("duplicate"), Some(3)), "{body}");

    let dedup_rows = "queen_store_rows{group=\"0\",keyspace=\"dedup\"}";
    let deadline = Instant::now() + Duration::from_secs(30);
    while node.counter(dedup_rows).await > 0 {
        assert!(Instant::now() < deadline, "the dedup rows outlived their window");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, body) = node.post("/api/v1/push", &retry("kept-3")).await;
    assert_eq!((body[0]["status"].as_str(), body[0]["offset"].as_u64()), (Some("queued"), Some(10)), "{body}");
    let kept = node.read_all("kept", "p").await;
    assert_eq!(kept.records.len(), 11, "every message is kept: only the rows went");

    let popped: Value = reqwest::get(node.url("/api/v1/pop/queue/kept?batch=2")).await.unwrap().json().await.unwrap();
    let first = &popped["messages"][0];
    assert_eq!(first["transactionId"], "kept-0", "{popped}");
    let ack = json!({"transactionId": first["transactionId"], "partitionId": first["partitionId"], "leaseId": first["leaseId"], "status": "completed"});
    let (status, body) = node.post("/api/v1/ack", &ack).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body[0]["success"], true, "a message past its window is acknowledged by its id: {body}");
}
