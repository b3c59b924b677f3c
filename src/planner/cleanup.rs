//! Partition cleanup, decided: a partition with no write for
//! `PARTITION_CLEANUP_DAYS`, no retained message (retention took every
//! payload and every transactionId hash), no dead letter and no live lease
//! is deleted with its cursors. A push to its name afterwards creates a new
//! partition, whose offsets start at 0.
//!
//! No partition of a queue that has a partition named by a Kafka partition
//! number ("0", "1", ..., as CreateTopics and the Kafka facade name them) is
//! cleaned up: Kafka numbers a topic's partitions by creation order, and
//! deleting one would renumber the partitions after it under its clients.
//!
//! The retention scanner (`retention_scan.rs`) finds the idle partitions;
//! the planner judges them again against the state it plans on and logs
//! `Effect::DeletePartition`, so every node applies the same.

use super::effect::Effect;
use super::overlay::Overlay;
use crate::store::Store;
use foldhash::{HashMap, HashMapExt};

/// Per queue, whether it has a partition named by a Kafka partition
/// number, looked up once per queue.
pub struct NumberedQueues(HashMap<u64, bool>);

impl Default for NumberedQueues {
    fn default() -> Self {
        Self(HashMap::new())
    }
}

impl NumberedQueues {
    fn has(&mut self, store: &Store, queue: u64) -> bool {
        *self.0.entry(queue).or_insert_with(|| {
            store.partitions.range((queue, 0)..=(queue, u64::MAX)).any(|(_, row)| is_kafka_number(&row.name))
        })
    }
}

fn is_kafka_number(name: &str) -> bool {
    name.parse::<u32>().is_ok()
}

/// Whether the store's partition may be deleted at `now_us`: idle for
/// `idle_us`, holding nothing, in a queue without numbered partitions.
pub fn is_idle_and_empty(
    store: &Store,
    (queue, partition): (u64, u64),
    (now_us, idle_us): (i64, i64),
    numbered: &mut NumberedQueues,
) -> bool {
    let Some(row) = store.partition(queue, partition) else { return false };
    if now_us.saturating_sub(row.last_write_us) < idle_us {
        return false;
    }
    if row.log_start < row.next_offset || row.txns_start < row.next_offset {
        return false;
    }
    let cursors = store.cursors.range((queue, partition, String::new())..(queue, partition + 1, String::new()));
    let mut leased = cursors.filter_map(|(_, c)| c.lease.as_ref());
    if leased.any(|lease| lease.expires_us > now_us) {
        return false;
    }
    let dead_letters = (queue, partition, String::new(), 0)..(queue, partition + 1, String::new(), 0);
    store.dlq.range(dead_letters).next().is_none() && !numbered.has(store, queue)
}

/// One `DeletePartition` per partition of `partitions` that is idle and
/// empty now, and that no unapplied batch changed.
pub fn plan_cleanup(
    store: &Store,
    overlay: &mut Overlay,
    partitions: &[(u64, u64)],
    now_us: i64,
    idle_us: i64,
) -> Vec<Effect> {
    let touched = overlay.touched_partitions();
    let mut numbered = NumberedQueues::default();
    let mut effects = Vec::new();
    for &(queue, partition) in partitions {
        if overlay.is_partition_deleted(queue, partition) || touched.contains(&(queue, partition)) {
            continue;
        }
        if is_idle_and_empty(store, (queue, partition), (now_us, idle_us), &mut numbered) {
            overlay.delete_partition(queue, partition);
            effects.push(Effect::DeletePartition { queue, partition });
        }
    }
    effects
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::planner::command::{Answer, Command, ConfigureQueue, PushItem};
    use crate::planner::testing::{fresh, run_at};
    use crate::planner::Planner;
    use crate::store::rows::{CursorRow, DlqRow, LeaseRow};
    use serde_json::json;

    const SECOND_US: i64 = 1_000_000;
    const T0: i64 = 1_000 * SECOND_US;
    const IDLE_US: i64 = 3_600 * SECOND_US;

    fn push_to(queue: &str, partition: &str, transaction_id: &str) -> Command {
        let message = Message::new(transaction_id.into(), b"1".to_vec());
        Command::Push(vec![PushItem::new(queue.into(), partition.into(), &message, 0)])
    }

    fn cleanup(partitions: Vec<(u64, u64)>) -> Command {
        Command::CleanupPartitions { partitions, idle_us: IDLE_US }
    }

    /// Queues "q" and "topic" keeping messages 30 s. "q" has one message in
    /// each of partitions "p" (id 1) and "kept" (id 2) at T0, "topic" one in
    /// "0" (id 3) and "named" (id 4). Retention has taken every message and
    /// hash but that of "kept", which got a second message at T0 + 39 s.
    fn emptied() -> (Store, Planner) {
        let (mut store, mut planner) = fresh();
        for queue in ["q", "topic"] {
            let options = json!({"retentionSeconds": 30}).as_object().unwrap().clone();
            let configure =
                Command::Configure(ConfigureQueue { queue: queue.into(), namespace: None, task: None, options });
            run_at(&mut planner, &mut store, T0 - 2, configure);
        }
        let pushes = [("q", "p"), ("q", "kept"), ("topic", "0"), ("topic", "named")];
        for (i, (queue, partition)) in pushes.into_iter().enumerate() {
            run_at(&mut planner, &mut store, T0 + i as i64, push_to(queue, partition, &format!("{partition}-1")));
        }
        run_at(&mut planner, &mut store, T0 + 39 * SECOND_US, push_to("q", "kept", "kept-2"));
        let retain = Command::Retain { partitions: all(), txn_window_min_s: 0 };
        run_at(&mut planner, &mut store, T0 + 40 * SECOND_US, retain);
        assert_eq!(store.partition(1, 1).map(|p| (p.log_start, p.txns_start, p.next_offset)), Some((1, 1, 1)));
        (store, planner)
    }

    fn all() -> Vec<(u64, u64)> {
        vec![(1, 1), (1, 2), (2, 3), (2, 4)]
    }

    #[test]
    fn an_idle_emptied_partition_is_deleted_and_its_name_starts_over() {
        let (mut store, mut planner) = emptied();
        let early = run_at(&mut planner, &mut store, T0 + IDLE_US - SECOND_US, cleanup(all()));
        assert!(matches!(early, Answer::CleanedUp { partitions: 0 }), "not idle long enough yet: {early:?}");

        let answer = run_at(&mut planner, &mut store, T0 + IDLE_US + 41 * SECOND_US, cleanup(all()));
        assert!(matches!(answer, Answer::CleanedUp { partitions: 1 }), "{answer:?}");
        assert!(store.partition(1, 1).is_none(), "the emptied partition is gone");
        assert!(store.partition(1, 2).is_some(), "a partition still holding a message is kept");
        assert!(store.partition(2, 3).is_some(), "a partition named by a Kafka number is kept");
        assert!(store.partition(2, 4).is_some(), "and every partition of its queue");

        let late = T0 + IDLE_US + 50 * SECOND_US;
        let Answer::Pushed(outcomes) = run_at(&mut planner, &mut store, late, push_to("q", "p", "p-1")) else {
            panic!("the push was refused")
        };
        assert_eq!((outcomes[0].partition_id, outcomes[0].offset), (5, 0), "a new partition, from offset 0");
    }

    #[test]
    fn a_push_planned_but_not_applied_keeps_the_partition_and_one_after_a_cleanup_makes_a_new_one() {
        let late = T0 + IDLE_US + 41 * SECOND_US;
        let (store, mut planner) = emptied();
        let _unapplied_push = planner.plan(&store, push_to("q", "p", "p-2"), late);
        let refused = planner.plan(&store, cleanup(vec![(1, 1)]), late);
        assert!(matches!(refused.answer, Answer::CleanedUp { partitions: 0 }), "{:?}", refused.answer);

        let (store, mut planner) = emptied();
        let deleted = planner.plan(&store, cleanup(vec![(1, 1)]), late);
        assert!(matches!(deleted.answer, Answer::CleanedUp { partitions: 1 }), "{:?}", deleted.answer);
        let after = planner.plan(&store, push_to("q", "p", "p-2"), late);
        let Answer::Pushed(outcomes) = &after.answer else { panic!("{:?}", after.answer) };
        assert_eq!((outcomes[0].partition_id, outcomes[0].offset), (5, 0), "the name goes to a new partition");
    }

    #[test]
    fn a_dead_letter_or_a_live_lease_keeps_the_partition() {
        let late = T0 + IDLE_US + 41 * SECOND_US;
        let (mut store, _) = emptied();
        let idle =
            |store: &Store, now_us| is_idle_and_empty(store, (1, 1), (now_us, IDLE_US), &mut NumberedQueues::default());
        let letter = DlqRow { error: Some("boom".into()), failures: 3, moved_us: T0 };
        store.dlq.insert((1, 1, "g".into(), 0), letter);
        assert!(!idle(&store, late));
        store.dlq.remove(&(1, 1, "g".into(), 0));
        assert!(idle(&store, late));

        let lease = LeaseRow { id: "l".into(), expires_us: late + 1, first: 0, last: 0 };
        store.set_cursor((1, 1, "g".into()), CursorRow { committed: 1, lease: Some(lease), ..Default::default() });
        assert!(!idle(&store, late));
        assert!(idle(&store, late + 1), "an expired lease does not");
    }
}
