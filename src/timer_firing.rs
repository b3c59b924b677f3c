//! The loop that fires due timers: it looks at the applied state every tick
//! and, when a timer is due, proposes a fire (the planner decides which fire,
//! so a cancel and a fire never both win).

use crate::node::Node;
use crate::planner::command::Command;
use std::sync::Arc;
use std::time::Duration;

const TICK: Duration = Duration::from_millis(50);

pub async fn run(node: Arc<Node>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now_us = chrono::Utc::now().timestamp_micros();
        let due = !node.state.read().expect("store lock").timers_due(now_us, 1).is_empty();
        if due && node.replicator.propose(Command::FireTimers).await.is_err() {
            return;
        }
    }
}
