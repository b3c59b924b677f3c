//! Planning a push: resolve or create queues and partitions, drop the
//! messages whose transactionId the partition already holds, and give the
//! rest gapless offsets.

use super::effect::Effect;
use super::items::{PushBody, PushItem, PushOutcome, PushStatus, QUEUE_MODE};
use super::overlay::Overlay;
use crate::log_id::LogId;
use crate::message::transaction_hash;
use crate::qlog::message_record::{MessageRecord, MessageSpan, Piece};
use crate::store::Store;
use foldhash::{HashSet, HashSetExt};
use std::collections::BTreeMap;

pub struct PlannedPush {
    pub effects: Vec<Effect>,
    pub messages: Vec<MessageRecord>,
    pub outcomes: Vec<PushOutcome>,
}

/// A push refused whole: it would take `queue` past its `maxSize`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueFull {
    pub queue: String,
    pub max_size: u64,
    pub unfinished: u64,
}

/// Whether the push fits every queue's `maxSize`: the messages it adds (new
/// transactionIds only) plus what queue mode has not finished there. Looked
/// at before anything is planned, so a refusal changes nothing.
pub fn check_max_size(store: &Store, overlay: &Overlay, items: &[PushItem]) -> Result<(), QueueFull> {
    /// Per queue: its bound, and the new messages the push brings.
    struct Adding {
        max: u64,
        new: HashSet<(Option<u64>, [u8; 16])>,
        /// Messages that cannot be duplicates (a Kafka batch's beyond its
        /// first, or all of one from a producer that is not idempotent).
        new_by_place: u64,
    }
    let mut adding: BTreeMap<u64, Adding> = BTreeMap::new();
    for item in items {
        let Some(queue) = overlay.queue_id(store, &item.queue) else { continue };
        // The bound is read once per queue: from an unapplied configure it
        // means parsing the queue's options.
        let slot = adding.entry(queue).or_insert_with(|| Adding {
            max: overlay.max_size(store, queue),
            new: HashSet::new(),
            new_by_place: 0,
        });
        if slot.max == 0 {
            continue;
        }
        let Some(hash) = item.dedup_hash() else {
            slot.new_by_place += u64::from(item.count());
            continue;
        };
        let partition = overlay.partition_id(store, queue, &item.partition);
        if partition.is_none_or(|p| overlay.dedup(store, queue, p, &hash).is_none()) {
            slot.new.insert((partition, hash));
            slot.new_by_place += u64::from(item.count()) - 1;
        }
    }
    for (queue, Adding { max, new, new_by_place }) in adding {
        let adds = new.len() as u64 + new_by_place;
        if max == 0 || adds == 0 {
            continue;
        }
        let unfinished = overlay.unfinished(store, queue, QUEUE_MODE);
        if unfinished + adds > max {
            let name = store.queue_name(queue).unwrap_or_default().to_string();
            return Err(QueueFull { queue: name, max_size: max, unfinished });
        }
    }
    Ok(())
}

pub fn plan_push(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    timestamp_us: i64,
    items: Vec<PushItem>,
) -> PlannedPush {
    let mut effects = Vec::new();
    let mut outcomes = Vec::with_capacity(items.len());
    // Per partition, in the order partitions first appear: the record being built.
    let mut records: BTreeMap<usize, MessageRecord> = BTreeMap::new();
    let mut order: Vec<(u64, u64)> = Vec::new();

    for item in items {
        let queue = match overlay.queue_id(store, &item.queue) {
            Some(q) => q,
            None => {
                let q = overlay.create_queue(store, &item.queue);
                effects.push(Effect::CreateQueue { id: q, name: item.queue.clone() });
                q
            }
        };
        let partition = match overlay.partition_id(store, queue, &item.partition) {
            Some(p) => p,
            None => {
                let p = overlay.create_partition(store, queue, &item.partition);
                effects.push(Effect::CreatePartition { queue, id: p, name: item.partition.clone() });
                p
            }
        };
        if let Some(offset) = item.dedup_hash().and_then(|hash| overlay.dedup(store, queue, partition, &hash)) {
            outcomes.push(PushOutcome {
                queue_id: queue,
                partition_id: partition,
                offset,
                status: PushStatus::Duplicate,
                timestamp_us,
            });
            continue;
        }
        if let Some(status) = out_of_order(store, overlay, queue, partition, &item) {
            outcomes.push(PushOutcome { queue_id: queue, partition_id: partition, offset: 0, status, timestamp_us });
            continue;
        }
        let offset = overlay.take_offsets(store, queue, partition, item.count());
        let (hashes, piece) = match item.body {
            PushBody::Message { transaction_id, payload } => {
                (vec![transaction_hash(&transaction_id)], Piece::Message(payload))
            }
            PushBody::Kafka(batch) => {
                let ids = (0..batch.count).map(|i| batch.transaction_id(i, id, offset + u64::from(i)));
                (ids.map(|t| transaction_hash(&t)).collect(), Piece::Kafka(batch))
            }
        };
        for (i, hash) in hashes.iter().enumerate() {
            overlay.record_dedup(queue, partition, *hash, offset + i as u64);
        }
        let slot = match order.iter().position(|k| *k == (queue, partition)) {
            Some(i) => i,
            None => {
                order.push((queue, partition));
                order.len() - 1
            }
        };
        let record = records.entry(slot).or_insert_with(|| MessageRecord {
            id,
            span: MessageSpan { queue, partition, first_offset: offset, count: 0 },
            timestamp_us,
            hashes: Vec::new(),
            pieces: Vec::new(),
        });
        record.span.count += piece.count();
        record.hashes.extend(hashes);
        record.pieces.push(piece);
        let status = PushStatus::Queued;
        outcomes.push(PushOutcome { queue_id: queue, partition_id: partition, offset, status, timestamp_us });
    }

    let messages: Vec<MessageRecord> = records.into_values().collect();
    for m in &messages {
        effects.push(Effect::Append {
            queue: m.span.queue,
            partition: m.span.partition,
            first_offset: m.span.first_offset,
            count: m.span.count,
        });
    }
    PlannedPush { effects, messages, outcomes }
}

/// Why an idempotent producer's Kafka batch may not be written, if it may
/// not: its epoch is fenced, or the record it follows is not stored. This
/// is where idempotence is decided, on replicated rows, so every node
/// decides alike and a new leader knows what the old one wrote: a batch
/// after one lost in a leader's crash is refused, and its producer sends
/// the lost one again, rather than taking it for written. Once retention
/// has dropped some of the partition's rows, a missing row proves no loss,
/// and the batch is let through, as Kafka lets through the sequence of a
/// producer whose state retention removed.
fn out_of_order(store: &Store, overlay: &Overlay, queue: u64, partition: u64, item: &PushItem) -> Option<PushStatus> {
    let (preceding, next_epoch) = item.producer_order_hashes();
    if next_epoch.is_some_and(|hash| overlay.dedup(store, queue, partition, &hash).is_some()) {
        return Some(PushStatus::Fenced);
    }
    let preceding = preceding?;
    let rows_dropped = store.partition(queue, partition).is_some_and(|row| row.txns_start > 0);
    (!rows_dropped && overlay.dedup(store, queue, partition, &preceding).is_none()).then_some(PushStatus::OutOfOrder)
}

#[cfg(test)]
mod tests {
    use crate::planner::command::{Answer, Command, ConfigureQueue, PushItem, PushOutcome, PushStatus};
    use crate::planner::testing::{fresh, kafka_batch, one_message_applied, plan, push, run_at};
    use crate::planner::Planner;
    use crate::store::Store;

    /// Pushes `item` and applies it; answers its outcome.
    fn pushed(planner: &mut Planner, store: &mut Store, at_us: i64, item: PushItem) -> PushOutcome {
        match run_at(planner, store, at_us, Command::Push(vec![item])) {
            Answer::Pushed(mut outcomes) => outcomes.remove(0),
            other => panic!("a push answered {other:?}"),
        }
    }

    #[test]
    fn an_idempotent_batch_after_one_that_was_never_stored_is_refused() {
        let (mut store, mut planner) = fresh();
        let first = pushed(&mut planner, &mut store, 1, kafka_batch(7, 0, 0, 3, false));
        assert_eq!((first.status, first.offset), (PushStatus::Queued, 0));
        // Sequences 3..5 were lost with the old leader; 6..8 come next.
        let skipped = pushed(&mut planner, &mut store, 2, kafka_batch(7, 0, 6, 3, false));
        assert_eq!(skipped.status, PushStatus::OutOfOrder, "a batch past a lost one was let through");
        let resent = pushed(&mut planner, &mut store, 3, kafka_batch(7, 0, 3, 3, false));
        assert_eq!((resent.status, resent.offset), (PushStatus::Queued, 3));
        let after = pushed(&mut planner, &mut store, 4, kafka_batch(7, 0, 6, 3, false));
        assert_eq!((after.status, after.offset), (PushStatus::Queued, 6));
        let retried = pushed(&mut planner, &mut store, 5, kafka_batch(7, 0, 3, 3, false));
        assert_eq!((retried.status, retried.offset), (PushStatus::Duplicate, 3));
    }

    #[test]
    fn batches_planned_together_follow_each_other_before_they_are_applied() {
        let (store, mut planner) = fresh();
        let items = vec![kafka_batch(7, 0, 0, 2, false), kafka_batch(7, 0, 2, 2, false)];
        let planned = plan(&mut planner, &store, 1, Command::Push(items));
        let later = plan(&mut planner, &store, 2, Command::Push(vec![kafka_batch(7, 0, 4, 2, false)]));
        for answer in [planned.answer, later.answer] {
            let Answer::Pushed(outcomes) = answer else { panic!("a push answered {answer:?}") };
            assert!(outcomes.iter().all(|o| o.status == PushStatus::Queued), "pipelined batches refused: {outcomes:?}");
        }
    }

    #[test]
    fn a_batch_from_an_epoch_its_producer_moved_past_is_fenced() {
        let (mut store, mut planner) = fresh();
        pushed(&mut planner, &mut store, 1, kafka_batch(7, 0, 0, 2, false));
        pushed(&mut planner, &mut store, 2, kafka_batch(7, 1, 0, 2, false));
        let stale = pushed(&mut planner, &mut store, 3, kafka_batch(7, 0, 2, 2, false));
        assert_eq!(stale.status, PushStatus::Fenced, "a batch of a bumped epoch was written");
        let other = pushed(&mut planner, &mut store, 4, kafka_batch(8, 0, 0, 1, false));
        assert_eq!(other.status, PushStatus::Queued, "another producer was refused");
    }

    #[test]
    fn a_bound_set_by_an_unapplied_configure_refuses_the_push_after_it() {
        let (store, mut planner) = one_message_applied();

        let mut options = serde_json::Map::new();
        options.insert("maxSize".into(), 1.into());
        let configure = ConfigureQueue { queue: "q".into(), namespace: None, task: None, options };
        let configured = plan(&mut planner, &store, 2, Command::Configure(configure));
        assert!(matches!(configured.answer, Answer::Configured { .. }), "{:?}", configured.answer);
        let second = plan(&mut planner, &store, 3, push("t2"));
        assert!(matches!(second.answer, Answer::QueueFull(_)), "a push past maxSize answered {:?}", second.answer);
    }
}
