//! Work the node proposes to itself when the applied state says it is due:
//! firing timers, sweeping expired KV rows and aborting Kafka transactions
//! past their timeout; and, in memory only,
//! collecting idle ephemeral queues. Each loop only notices; the
//! planner decides what the entry does, so a concurrent write always wins
//! or loses cleanly.

use crate::node::Node;
use crate::planner::command::Command;
use crate::planner::kafka_txn::{is_expired, KafkaTxnOp};
use crate::planner::producers::any_expired;
use crate::replicate::ProposeError;
use crate::store::rows::KafkaTxnState;
use crate::store::Store;
use futures_util::future::join_all;
use std::sync::Arc;
use std::time::Duration;

/// Every `tick`, proposes `command` to each raft group whose store at this
/// time has work for it, as `due` says, each group on its own so that one
/// electing a leader holds up no other; stops when the node takes no more
/// writes. A proposal refused otherwise (no leader yet, a timeout) is made
/// again at a later tick, while the work is still due.
pub async fn run(
    node: Arc<Node>,
    tick: Duration,
    due: impl Fn(&Store, i64) -> bool + Clone,
    command: impl Fn() -> Command + Clone,
) {
    let groups = (0..node.groups().len()).map(|g| {
        let node = node.clone();
        let (due, command) = (due.clone(), command.clone());
        async move {
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let group = &node.groups()[g];
                let now_us = chrono::Utc::now().timestamp_micros();
                let is_due = due(&group.view.local(), now_us);
                if is_due && matches!(group.replicator.propose(command()).await, Err(ProposeError::ShuttingDown)) {
                    return;
                }
            }
        }
    });
    join_all(groups).await;
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

/// Idempotent Kafka producers silent past
/// `QUEEN_KAFKA_PRODUCER_ID_EXPIRATION_MS`: looked for once a minute.
pub async fn expire_producers(node: Arc<Node>) {
    let expiry_us = (node.settings.kafka_producer_id_expiration_ms as i64).saturating_mul(1000);
    let due = move |store: &Store, now: i64| any_expired(store, now, expiry_us);
    run(node, Duration::from_secs(60), due, move || Command::ExpireProducers { expiry_us }).await
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
