//! Retention, decided: where a partition's two watermarks belong now.
//!
//! - `log_start`: payloads below it are gone. A message goes once it is
//!   older than its queue's `retentionSeconds`, or once it is older than
//!   `completedRetentionSeconds` and every consumer group on its partition
//!   has completed it (a group subscribed to the queue with no cursor on the
//!   partition has completed nothing it would deliver; with no group,
//!   nothing is completed; a dead letter is never completed).
//! - `txns_start`: transactionId hashes below it are gone. They are kept for
//!   the longer of the completed retention and `QUEEN_RAFT_TXN_WINDOW_MIN_S`,
//!   so a retry is still answered its original offset after the payload
//!   went, and never above `log_start`.
//!
//! - the dedup rows themselves go once past the same window, whether or not
//!   the payloads are kept (`ForgetDedup`), so a queue that keeps its
//!   messages forever keeps only the window's rows.
//!
//! The scanner (`retention_scan.rs`) finds the partitions whose watermarks
//! would move; the planner computes them again against the state it plans
//! on and logs them as `Effect::Retain`, so every node applies the same.

use super::effect::Effect;
use super::overlay::Overlay;
use crate::queue_options::QueueOptions;
use crate::store::Store;
use std::collections::BTreeMap;

const SECOND_US: i64 = 1_000_000;

/// What retention needs to know of one queue, gathered once for all its
/// partitions.
pub struct QueueRetention {
    queue: u64,
    retention_s: i64,
    completed_retention_s: i64,
    /// For completed retention: every consumer group of the queue, with the
    /// time it subscribed from (0: from the log start). A group with a
    /// cursor on some partition and no `groups` row (queue mode, Kafka
    /// groups) counts as subscribed from the log start.
    groups: Vec<(String, i64)>,
}

impl QueueRetention {
    /// None when the queue is gone or keeps its messages for good.
    pub fn of(store: &Store, queue: u64) -> Option<Self> {
        let row = store.queues.get(&store.queue_name(queue)?.to_string())?;
        let options = QueueOptions::parse(&row.options);
        let (retention_s, completed_retention_s) = (options.retention_seconds(), options.completed_retention_seconds());
        if retention_s == 0 && completed_retention_s == 0 {
            return None;
        }
        let mut groups = BTreeMap::new();
        if completed_retention_s > 0 {
            for ((_, group), row) in store.groups.range((queue, String::new())..(queue + 1, String::new())) {
                groups.insert(group.clone(), row.from_us);
            }
            for ((_, _, group), _) in store.cursors.range((queue, 0, String::new())..(queue + 1, 0, String::new())) {
                groups.entry(group.clone()).or_insert(0);
            }
        }
        Some(Self { queue, retention_s, completed_retention_s, groups: groups.into_iter().collect() })
    }
}

/// Each queue's `QueueRetention`, gathered once while partitions are walked
/// in key order (a queue's partitions come together).
#[derive(Default)]
pub struct ByQueue(Option<(u64, Option<QueueRetention>)>);

impl ByQueue {
    /// None when the queue is gone or keeps its messages for good.
    pub fn get(&mut self, store: &Store, queue: u64) -> Option<&QueueRetention> {
        if self.0.as_ref().is_none_or(|(q, _)| *q != queue) {
            self.0 = Some((queue, QueueRetention::of(store, queue)));
        }
        self.0.as_ref().and_then(|(_, retention)| retention.as_ref())
    }
}

/// A partition's watermarks as retention would set them at `now_us`; none
/// when neither moves (or the partition is gone).
pub fn watermarks(
    store: &Store,
    retention: &QueueRetention,
    partition: u64,
    now_us: i64,
    txn_window_min_s: u64,
) -> Option<(u64, u64)> {
    let queue = retention.queue;
    let row = store.partition(queue, partition)?;
    // The first offset stored at or after `seconds` ago: everything below is older.
    let first_within = |seconds: i64| {
        store.locator.first_at_or_after(queue, partition, now_us - seconds * SECOND_US).unwrap_or(row.next_offset)
    };
    let mut log_start = row.log_start;
    let age = retention.retention_s;
    if age > 0 {
        log_start = log_start.max(first_within(age));
    }
    let completed_age = retention.completed_retention_s;
    if completed_age > 0 {
        let completed = completed_by_every_group(store, retention, partition, row.log_start, row.next_offset);
        let first_dead_letter = store
            .dlq
            .range((queue, partition, String::new(), 0)..(queue, partition + 1, String::new(), 0))
            .map(|(k, _)| k.3)
            .min()
            .unwrap_or(u64::MAX);
        log_start = log_start.max(completed.min(first_dead_letter).min(first_within(completed_age)));
    }
    let hash_window = completed_age.max(txn_window_min_s as i64);
    let txns_start = row.txns_start.max(log_start.min(first_within(hash_window)));
    (log_start > row.log_start || txns_start > row.txns_start).then_some((log_start, txns_start))
}

/// Where the slowest consumer group of the queue stands on a partition: its
/// cursor there, or for a group with none yet, the offset its first pop
/// would start from. 0 with no group: nothing is completed.
fn completed_by_every_group(
    store: &Store,
    retention: &QueueRetention,
    partition: u64,
    log_start: u64,
    next_offset: u64,
) -> u64 {
    let queue = retention.queue;
    let position = |(group, from_us): &(String, i64)| match store.cursors.get(&(queue, partition, group.clone())) {
        Some(cursor) => cursor.committed,
        None if *from_us == 0 => log_start,
        None => store.locator.first_at_or_after(queue, partition, *from_us).unwrap_or(next_offset),
    };
    retention.groups.iter().map(position).min().unwrap_or(0)
}

/// The `Retain` effects for the partitions the scanner found due, each
/// judged again against the store.
pub fn plan_retain(
    store: &Store,
    overlay: &mut Overlay,
    partitions: &[(u64, u64)],
    now_us: i64,
    txn_window_min_s: u64,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    let mut by_queue = ByQueue::default();
    for &(queue, partition) in partitions {
        let Some(retention) = by_queue.get(store, queue) else { continue };
        if let Some((log_start, txns_start)) = watermarks(store, retention, partition, now_us, txn_window_min_s) {
            overlay.move_log_start(queue, partition, log_start);
            effects.push(Effect::Retain { queue, partition, log_start, txns_start });
        }
    }
    effects
}

/// The offset below which a partition's dedup rows are past their window at
/// `now_us`, when it has some: the first offset stored within the longer
/// of its queue's completed retention and `txn_window_min_s`. The window
/// holds whether or not the payloads are kept.
pub fn dedup_expired_below(
    store: &Store,
    windows: &mut DedupWindows,
    (queue, partition): (u64, u64),
    now_us: i64,
    txn_window_min_s: u64,
) -> Option<u64> {
    let oldest = store.dedup.oldest(queue, partition)?;
    let window_s = windows.get(store, queue).max(txn_window_min_s as i64);
    let row = store.partition(queue, partition)?;
    let since = now_us.saturating_sub(window_s.saturating_mul(SECOND_US));
    let below = store.locator.first_at_or_after(queue, partition, since).unwrap_or(row.next_offset);
    (oldest < below).then_some(below)
}

/// Each queue's completed retention in seconds, read once while partitions
/// are walked in key order.
#[derive(Default)]
pub struct DedupWindows(Option<(u64, i64)>);

impl DedupWindows {
    fn get(&mut self, store: &Store, queue: u64) -> i64 {
        match self.0 {
            Some((q, window)) if q == queue => window,
            _ => {
                let options = store.queue_name(queue).and_then(|name| store.queues.get(&name.to_string()));
                let window = options.map_or(0, |row| QueueOptions::parse(&row.options).completed_retention_seconds());
                self.0 = Some((queue, window));
                window
            }
        }
    }
}

/// The `ForgetDedup` effects for the partitions the scanner found due,
/// each judged again against the store. Rows planned but not applied are
/// newer than any it drops.
pub fn plan_expire_dedup(store: &Store, partitions: &[(u64, u64)], now_us: i64, txn_window_min_s: u64) -> Vec<Effect> {
    let mut windows = DedupWindows::default();
    partitions
        .iter()
        .filter_map(|&(queue, partition)| {
            let below = dedup_expired_below(store, &mut windows, (queue, partition), now_us, txn_window_min_s)?;
            Some(Effect::ForgetDedup { queue, partition, below })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{Answer, Command, ConfigureQueue, PushStatus};
    use crate::planner::testing::{claimed, fresh, pop, push, run_at, settle};
    use crate::planner::Planner;
    use crate::store::rows::GroupRow;
    use serde_json::json;

    const T0: i64 = 1_000 * SECOND_US;

    /// Queue "q" with `options`, and ten messages t0..t9 in partition "p":
    /// the first six stored at T0, the rest at T0 + 300 s.
    fn ten_messages(options: serde_json::Value) -> (Store, Planner) {
        let (mut store, mut planner) = fresh();
        let options = options.as_object().unwrap().clone();
        let configure = Command::Configure(ConfigureQueue { queue: "q".into(), namespace: None, task: None, options });
        run_at(&mut planner, &mut store, T0 - 1, configure);
        for i in 0..10 {
            let at = if i < 6 { T0 + i } else { T0 + 300 * SECOND_US + i };
            run_at(&mut planner, &mut store, at, push(&format!("t{i}")));
        }
        (store, planner)
    }

    fn retain(planner: &mut Planner, store: &mut Store, at_us: i64, txn_window_min_s: u64) -> usize {
        let partitions = vec![(1, 1)];
        match run_at(planner, store, at_us, Command::Retain { partitions, txn_window_min_s }) {
            Answer::Retained { partitions } => partitions,
            other => panic!("retain answered {other:?}"),
        }
    }

    fn marks(store: &Store) -> (u64, u64) {
        let row = store.partition(1, 1).unwrap();
        (row.log_start, row.txns_start)
    }

    fn pushed_again(planner: &mut Planner, store: &mut Store, at_us: i64, id: &str) -> (PushStatus, u64) {
        match run_at(planner, store, at_us, push(id)) {
            Answer::Pushed(outcomes) => (outcomes[0].status, outcomes[0].offset),
            other => panic!("push answered {other:?}"),
        }
    }

    #[test]
    fn messages_older_than_the_retention_go_and_their_hashes_outlive_them() {
        let (mut store, mut planner) = ten_messages(json!({"retentionSeconds": 30}));
        assert_eq!(retain(&mut planner, &mut store, T0 + 20 * SECOND_US, 0), 0, "nothing is 30 s old yet");
        // At T0 + 40 s the first six are older than 30 s; hashes stay for the 900 s window.
        assert_eq!(retain(&mut planner, &mut store, T0 + 40 * SECOND_US, 900), 1);
        assert_eq!(marks(&store), (6, 0));
        assert_eq!(pushed_again(&mut planner, &mut store, T0 + 41 * SECOND_US, "t2"), (PushStatus::Duplicate, 2));
        // Past the window the hashes go too, up to the log start and no further.
        assert_eq!(retain(&mut planner, &mut store, T0 + 1000 * SECOND_US, 900), 1);
        assert_eq!(marks(&store), (10, 6), "all past retention; the later four's hashes are in the window");
        assert_eq!(retain(&mut planner, &mut store, T0 + 1300 * SECOND_US, 900), 1);
        assert_eq!(marks(&store), (10, 10));
        assert_eq!(pushed_again(&mut planner, &mut store, T0 + 1301 * SECOND_US, "t2").0, PushStatus::Queued);
    }

    #[test]
    fn completed_retention_waits_for_every_group_and_spares_dead_letters() {
        let (mut store, mut planner) = ten_messages(json!({"completedRetentionSeconds": 10}));
        let later = T0 + 100 * SECOND_US;
        assert_eq!(retain(&mut planner, &mut store, later, 0), 0, "no group has completed anything");
        let commit = |group: &str, offset: u64| {
            Command::CommitOffsets(vec![crate::planner::command::CursorCommit {
                queue: 1,
                partition: 1,
                group: group.into(),
                offset,
                metadata: String::new(),
            }])
        };
        run_at(&mut planner, &mut store, later, commit("a", 8));
        run_at(&mut planner, &mut store, later, commit("b", 4));
        assert_eq!(retain(&mut planner, &mut store, later + 1, 0), 1);
        assert_eq!(marks(&store), (4, 4), "the slower group holds the start");
        run_at(&mut planner, &mut store, later, commit("b", 10));
        assert_eq!(retain(&mut planner, &mut store, T0 + 305 * SECOND_US, 0), 1);
        assert_eq!(marks(&store).0, 6, "6 and 7 are completed by both groups but younger than 10 s");
        assert_eq!(retain(&mut planner, &mut store, T0 + 320 * SECOND_US, 0), 1);
        assert_eq!(marks(&store).0, 8, "group a stands at 8");
    }

    #[test]
    fn a_subscribed_group_without_a_cursor_here_has_completed_nothing() {
        let (mut store, mut planner) = ten_messages(json!({"completedRetentionSeconds": 10}));
        let later = T0 + 400 * SECOND_US;
        let commit = Command::CommitOffsets(vec![crate::planner::command::CursorCommit {
            queue: 1,
            partition: 1,
            group: "fast".into(),
            offset: 10,
            metadata: String::new(),
        }]);
        run_at(&mut planner, &mut store, later, commit);
        let lazy = GroupRow { from_us: 0, created_us: later, conflate: false };
        store.groups.insert((1, "lazy".into()), lazy);
        assert_eq!(retain(&mut planner, &mut store, later + 1, 0), 0, "the lazy group would start at 0");
        store
            .groups
            .insert((1, "lazy".into()), GroupRow { from_us: T0 + 100 * SECOND_US, created_us: later, conflate: false });
        assert_eq!(retain(&mut planner, &mut store, later + 2, 0), 1);
        assert_eq!(marks(&store).0, 6, "subscribed from after the first six: those are nothing it would get");
    }

    #[test]
    fn a_group_with_a_cursor_elsewhere_in_the_queue_and_none_here_has_completed_nothing_here() {
        let (mut store, mut planner) = ten_messages(json!({"completedRetentionSeconds": 10}));
        let later = T0 + 400 * SECOND_US;
        let message = crate::message::Message::new("other".into(), b"1".to_vec());
        let other = crate::planner::command::PushItem::new("q".into(), "p2".into(), &message, 0);
        run_at(&mut planner, &mut store, later, Command::Push(vec![other]));
        let commit = |group: &str, partition: u64, offset: u64| {
            Command::CommitOffsets(vec![crate::planner::command::CursorCommit {
                queue: 1,
                partition,
                group: group.into(),
                offset,
                metadata: String::new(),
            }])
        };
        run_at(&mut planner, &mut store, later, commit("fast", 1, 10));
        // Queue mode and Kafka groups have cursors and no `groups` row.
        run_at(&mut planner, &mut store, later, commit("__QUEUE_MODE__", 2, 1));
        assert_eq!(retain(&mut planner, &mut store, later + 1, 0), 0, "queue mode has not popped partition p");
    }

    #[test]
    fn a_pop_planned_after_an_unapplied_retain_starts_at_the_new_log_start() {
        let (mut store, mut planner) = ten_messages(json!({"retentionSeconds": 200}));
        let at = T0 + 400 * SECOND_US;
        let retained = planner.plan(&store, Command::Retain { partitions: vec![(1, 1)], txn_window_min_s: 0 }, at);
        let popped = planner.plan(&store, pop("g"), at);
        settle(&mut store, &retained);
        settle(&mut store, &popped);
        assert_eq!(claimed(&popped).messages[0].0, 6, "the first message still held");
        assert_eq!(store.cursors.get(&(1, 1, "g".to_string())).unwrap().lease.as_ref().unwrap().first, 6);
    }

    #[test]
    fn a_cursor_behind_the_log_start_moves_up_to_it() {
        let (mut store, mut planner) = ten_messages(json!({"retentionSeconds": 30}));
        let commit = Command::CommitOffsets(vec![crate::planner::command::CursorCommit {
            queue: 1,
            partition: 1,
            group: "slow".into(),
            offset: 2,
            metadata: String::new(),
        }]);
        run_at(&mut planner, &mut store, T0 + 30 * SECOND_US, commit);
        retain(&mut planner, &mut store, T0 + 40 * SECOND_US, 0);
        let cursor = store.cursors.get(&(1, 1, "slow".to_string())).unwrap();
        assert_eq!(cursor.committed, 6);
    }
}
