//! Work the node proposes to itself when the applied state says it is due:
//! firing timers, sweeping expired KV rows and aborting Kafka transactions
//! past their timeout; and, in memory only,
//! collecting idle ephemeral queues. Each loop only notices; the
//! planner decides what the entry does, so a concurrent write always wins
//! or loses cleanly.

use crate::node::Node;
use crate::planner::command::Command;
use crate::planner::kafka_txn::{is_expired, KafkaTxnOp};
use crate::store::rows::KafkaTxnState;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Every `tick`, proposes `command` to each raft group whose store at this
/// time has work for it, as `due` says; stops when the node takes no more
/// writes.
pub async fn run(node: Arc<Node>, tick: Duration, due: fn(&Store, i64) -> bool, command: fn() -> Command) {
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let now_us = chrono::Utc::now().timestamp_micros();
        for group in node.groups() {
            let is_due = due(&group.view.local(), now_us);
            if is_due && group.replicator.propose(command()).await.is_err() {
                return;
            }
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

/// Kafka transactions open past their `transaction.timeout.ms`: looked for
/// once a second, and aborted with their producer fenced.
pub async fn expire_kafka_txns(node: Arc<Node>) {
    let due = |store: &Store, now: i64| {
        store.kafka_txns().any(|(_, row)| row.state == KafkaTxnState::Ongoing && is_expired(row, now))
    };
    run(node, Duration::from_secs(1), due, || Command::KafkaTxn(Box::new(KafkaTxnOp::Expire))).await
}

/// Idle implicit ephemeral queues (`QUEEN_EPHEMERAL_IDLE_S`), looked for
/// every few seconds. In memory only: nothing to propose.
pub async fn collect_idle_ephemeral(node: Arc<Node>) {
    let idle = Duration::from_secs(node.settings.ephemeral_idle_s);
    let mut interval = tokio::time::interval(idle.clamp(Duration::from_secs(1), Duration::from_secs(10)));
    loop {
        interval.tick().await;
        let gone = node.ephemeral.collect_idle(idle);
        if gone > 0 {
            tracing::debug!(queues = gone, "idle ephemeral queues collected");
        }
    }
}
