//! Planning a push: resolve or create queues and partitions, drop the
//! messages whose transactionId the partition already holds, and give the
//! rest gapless offsets.

use super::command::{PushBody, PushItem, PushOutcome, PushStatus, QUEUE_MODE};
use super::effect::Effect;
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

#[cfg(test)]
mod tests {
    use crate::planner::command::{Answer, Command, ConfigureQueue};
    use crate::planner::testing::{one_message_applied, plan, push};

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
