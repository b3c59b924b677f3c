//! The loop that deletes expired KV rows (TTLs, expired locks, old traces):
//! once a second it looks at the applied state's expiry index and, when a
//! row has run out, proposes a sweep. The planner decides which rows go, so
//! a key written again in the meantime stays.

use crate::node::Node;
use crate::planner::command::Command;
use std::sync::Arc;
use std::time::Duration;

const TICK: Duration = Duration::from_secs(1);

pub async fn run(node: Arc<Node>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now_us = chrono::Utc::now().timestamp_micros();
        let expired = !node.state.read().expect("store lock").kv_expired(now_us, 1).is_empty();
        if expired && node.replicator.propose(Command::SweepKv).await.is_err() {
            return;
        }
    }
}
