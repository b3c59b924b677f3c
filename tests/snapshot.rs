//! The state machine's snapshot: built from a node while writes go on, staged
//! in another data directory, installed by that directory's next boot (a
//! real process), which then holds every write answered before the build.

mod common;

use clap::Parser;
use queen::seams::message::Message;
use queen::seams::planner::PushItem;
use queen::seams::planner::{Expiry, KvKind, KvOp};
use queen::seams::replicate::snapshot;
use queen::seams::replicate::snapshot::{Site, Source, STAGED};
use queen::seams::replicate::Typed;
use queen::seams::storage::OsStorage;
use queen::Node;
use queen::Settings;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn settings(dir: &std::path::Path) -> Settings {
    Settings::parse_from([
        "queen",
        "--data-dir",
        dir.to_str().unwrap(),
        "--http-addr",
        "127.0.0.1:0",
        "--segment-bytes",
        "4096",
        "--durable-every-ms",
        "50",
    ])
}

fn push(queue: &str, n: u64) -> PushItem {
    let message = Message::new(format!("{queue}-{n}"), json!({ "n": n }).to_string().into_bytes());
    PushItem::new(queue.into(), "p".into(), &message, 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_taken_under_writes_boots_another_node_with_every_answered_write() {
    let tmp = tempfile::tempdir().unwrap();
    let (source_dir, target_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    let node = Arc::new(Node::boot(settings(&source_dir)).unwrap());
    for n in 0..60 {
        let answer =
            node.group0().replicator.ask(Typed::push(vec![push("orders", n), push("audit", n)])).await.unwrap();
        assert!(answer.is_ok(), "push {n} refused");
    }
    let put = KvOp {
        ns: "app".into(),
        kind: KvKind::Put { key: "color".into(), value: "\"blue\"".into(), expiry: Expiry::Forever, expect: None },
        required: true,
    };
    node.group0().replicator.ask(Typed::kv(vec![put])).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    // Writes go on while the snapshot is built.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (node, writing) = (node.clone(), writing.clone());
        tokio::spawn(async move {
            let mut n = 60;
            while writing.load(Ordering::Relaxed) {
                node.group0().replicator.ask(Typed::push(vec![push("orders", n)])).await.unwrap().unwrap();
                n += 1;
            }
            n
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let into = target_dir.join(STAGED);
    std::fs::create_dir_all(into.parent().unwrap()).unwrap();
    let built = {
        let node = node.clone();
        let into = into.clone();
        tokio::task::spawn_blocking(move || {
            let data_dir = &node.settings.data_dir;
            let site = Site { storage: &OsStorage, data_dir, store_dir: &data_dir.join("store") };
            snapshot::build(
                &Source { site, checkpoint: &node.group0().checkpoint, reclaim: &node.group0().reclaim },
                &into,
            )
        })
        .await
        .unwrap()
        .unwrap()
    };
    writing.store(false, Ordering::Relaxed);
    let written = writer.await.unwrap();
    assert!(written > 60, "writes went on during the build");
    assert!(built.files >= 2, "{built:?}");
    assert!(built.applied.index >= 61, "the copied checkpoint holds the writes before it: {built:?}");
    assert_eq!(snapshot::manifest(&OsStorage, &into).unwrap(), Some(built.clone()));
    node.group0().replicator.stop();

    let target = common::Node::start(&target_dir, &[("QUEEN_RAFT_SEGMENT_BYTES", "4096")]).await;
    assert!(target.log_text().contains("installed the staged snapshot"), "{}", target.log_text());
    assert!(!into.exists(), "the staged snapshot is swapped in, not left behind");
    let audit = target.read_all("audit", "p").await;
    assert_eq!(audit.records.len(), 60);
    let orders = target.read_all("orders", "p").await;
    // Every push answered before the build began is there, gapless from 0;
    // the ones during it are there up to where the copy was taken.
    assert!(orders.records.len() >= 60, "{} of orders", orders.records.len());
    for (i, (offset, txn, payload)) in orders.records.iter().enumerate() {
        assert_eq!((*offset, txn.as_str()), (i as u64, format!("orders-{i}").as_str()));
        assert_eq!(payload["n"], json!(i));
    }
    let color: serde_json::Value =
        reqwest::get(target.url("/api/v1/kv/app/color")).await.unwrap().json().await.unwrap();
    assert_eq!(color["value"], json!("blue"));
}
