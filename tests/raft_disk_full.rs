//! recovery.md, "A disk is full", rehearsed on three real nodes: a follower
//! on a small volume fills to 100% with the entries the others accept,
//! logs `raft log write failed: No space left on device` and stops (role
//! stopped, /health 503, its process still up) while the other two go on
//! committing; its volume grown and the node restarted, it catches up and
//! serves every acknowledged write.

mod common;

use common::cluster::{Cluster, Ledger};
use common::push_body;
use common::volume::{incompressible, SmallVolume};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAYLOAD: usize = 64 * 1024;

async fn health(cluster: &Cluster, i: usize) -> (u16, Value) {
    let node = cluster.node(i);
    let r = node.http.get(node.url("/health")).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Pushes one big message as `txid` through node `via`; records it in
/// `ledger` when acknowledged.
async fn push(cluster: &Cluster, via: usize, ledger: &Ledger, txid: String) -> u16 {
    let body = push_body(&[("full".into(), "p".into(), txid.clone(), json!(incompressible(PAYLOAD)))]);
    let node = cluster.node(via);
    let Ok(r) = node.http.post(node.url("/api/v1/push")).json(&body).send().await else { return 0 };
    let status = r.status().as_u16();
    if status == 201 {
        let answer: Vec<Value> = r.json().await.unwrap();
        ledger.lock().unwrap().insert(txid, ("p".into(), answer[0]["offset"].as_u64().unwrap()));
    }
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_whose_volume_fills_stops_the_others_go_on_and_after_growing_it_catches_up_losing_nothing() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.leader().await;
    let full = (leader + 1) % 3;
    let via = (leader + 2) % 3;

    // The follower's data directory onto a 12 MiB volume.
    cluster.nodes[full].as_mut().unwrap().terminate();
    let Some(volume) = SmallVolume::mount_at(&cluster.dir(full), 12) else { return };
    cluster.start_node_with(full, &[]).await;

    // Writes through the others fill it; it stops, and stays up.
    let ledger: Ledger = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seq = 0;
    loop {
        push(&cluster, via, &ledger, format!("m{seq}")).await;
        seq += 1;
        if seq % 10 == 0 && health(&cluster, full).await.0 == 503 {
            break;
        }
        assert!(Instant::now() < deadline, "the follower never stopped; {:.1}% used", volume.used_pct());
    }
    let (_, h) = health(&cluster, full).await;
    assert_eq!(h["raft"]["role"], "stopped", "{h}");
    assert_eq!(h["status"], "stopped", "{h}");
    let log = cluster.node(full).log_text();
    assert!(log.contains("raft log write failed: No space left on device"), "{log}");
    let node = cluster.nodes[full].as_mut().unwrap();
    assert!(node.child.try_wait().unwrap().is_none(), "the stopped node's process exited");
    eprintln!("node {} stopped at {:.1}% after {seq} pushes", full + 1, volume.used_pct());

    // The other two go on committing.
    let before = ledger.lock().unwrap().len();
    for i in 0..20 {
        assert_eq!(push(&cluster, via, &ledger, format!("after-{i}")).await, 201, "the others stopped committing");
    }
    assert_eq!(ledger.lock().unwrap().len(), before + 20);

    // Its volume grown and the node restarted, it catches up.
    volume.grow(256);
    cluster.nodes[full].as_mut().unwrap().kill9();
    cluster.start_node_with(full, &[]).await;
    for i in 0..5 {
        assert_eq!(push(&cluster, full, &ledger, format!("back-{i}")).await, 201, "a write through the restarted node");
    }
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged", ledger.len());
    cluster.check_ledger(&ledger, "full", &["p".into()]).await;
}
