//! Work the node proposes to itself when the applied state says it is due:
//! firing timers and sweeping expired KV rows. Each loop only notices; the
//! planner decides what the entry does, so a concurrent write always wins
//! or loses cleanly.

use crate::node::Node;
use crate::planner::command::Command;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Every `tick`, proposes `command` when `due` says the store at this time
/// has work for it; stops when the node takes no more writes.
pub async fn run(node: Arc<Node>, tick: Duration, due: fn(&Store, i64) -> bool, command: fn() -> Command) {
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let now_us = chrono::Utc::now().timestamp_micros();
        let is_due = due(&node.state.read().expect("store lock"), now_us);
        if is_due && node.replicator.propose(command()).await.is_err() {
            return;
        }
    }
}

/// Timers: a 50 ms tick, so a timer fires within about that of its time.
pub async fn fire_timers(node: Arc<Node>) {
    run(node, Duration::from_millis(50), |store, now| !store.timers_due(now, 1).is_empty(), || Command::FireTimers)
        .await
}

/// Expired KV rows (TTLs, lapsed locks, old traces): looked for once a second.
pub async fn sweep_kv(node: Arc<Node>) {
    run(node, Duration::from_secs(1), |store, now| !store.kv_expired(now, 1).is_empty(), || Command::SweepKv).await
}
