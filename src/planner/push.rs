//! Planning a push: resolve or create queues and partitions, drop the
//! messages whose transactionId the partition already holds, and give the
//! rest gapless offsets.

use super::effect::Effect;
use super::items::{PushBody, PushItem, PushOutcome, PushStatus, QUEUE_MODE};
use super::overlay::Overlay;
use crate::log_id::LogId;
use crate::message::transaction_hash;
use crate::qlog::kafka_batch::KafkaBatch;
use crate::qlog::message_record::{MessageRecord, MessageSpan, Piece};
use crate::store::rows::{ProducerBatch, FORGOTTEN};
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
        let partition = overlay.partition_id(store, queue, &item.partition);
        if let (Some(p), PushBody::Kafka(_)) = (partition, &item.body) {
            if verdict(store, overlay, queue, p, &item.body) == Verdict::New {
                slot.new_by_place += u64::from(item.count());
            }
            continue;
        }
        let Some(hash) = item.dedup_hash() else {
            slot.new_by_place += u64::from(item.count());
            continue;
        };
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
        let refused =
            |offset, status| PushOutcome { queue_id: queue, partition_id: partition, offset, status, timestamp_us };
        if let Some((status, offset)) = verdict(store, overlay, queue, partition, &item.body).refusal() {
            outcomes.push(refused(offset, status));
            continue;
        }
        let offset = overlay.take_offsets(store, queue, partition, item.count());
        let (hashes, piece) = match item.body {
            PushBody::Message { transaction_id, payload } => {
                (vec![transaction_hash(&transaction_id)], Piece::Message(payload))
            }
            PushBody::Kafka(batch) if overlay.catalogue(store) >= 5 => {
                // No dedup row will be made of them (apply skips a Kafka
                // piece's hashes): the producer's state answers retries.
                if let Some(effect) = producer_batch(overlay, store, queue, partition, &batch, offset, timestamp_us) {
                    effects.push(effect);
                }
                (vec![[0; 16]; batch.count as usize], Piece::Kafka(batch))
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

/// What a push item meets in its partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    New,
    /// Stored before, at this offset.
    Duplicate(u64),
    /// An idempotent producer's batch whose preceding one is not stored.
    OutOfOrder,
    /// An idempotent producer's batch from an epoch it has moved past.
    Fenced,
}

impl Verdict {
    /// The outcome of an item not written, and the offset it answers.
    fn refusal(self) -> Option<(PushStatus, u64)> {
        match self {
            Verdict::New => None,
            Verdict::Duplicate(offset) => Some((PushStatus::Duplicate, offset)),
            Verdict::OutOfOrder => Some((PushStatus::OutOfOrder, 0)),
            Verdict::Fenced => Some((PushStatus::Fenced, 0)),
        }
    }
}

/// Whether an item may be written to the partition. A message is a
/// duplicate when its transactionId's dedup row is there. An idempotent
/// Kafka producer's batch is judged, from catalogue 5, by the producer's
/// state in the partition, as Kafka's `ProducerStateManager` judges it; a
/// producer the state does not know (new, forgotten, or last seen before
/// the upgrade to catalogue 5) by the dedup rows its earlier records may
/// have. This is decided on replicated rows, so every node decides alike
/// and a new leader knows what the old one wrote.
fn verdict(store: &Store, overlay: &Overlay, queue: u64, partition: u64, body: &PushBody) -> Verdict {
    let batch = match body {
        PushBody::Message { transaction_id, .. } => {
            let hash = transaction_hash(transaction_id);
            return overlay.dedup(store, queue, partition, &hash).map_or(Verdict::New, Verdict::Duplicate);
        }
        PushBody::Kafka(batch) => batch,
    };
    let Some((producer_id, epoch, first_seq)) = batch.producer() else {
        return Verdict::New;
    };
    let last_seq = last_sequence(first_seq, batch.count);
    let legacy = || legacy_verdict(store, overlay, queue, partition, batch);
    if overlay.catalogue(store) < 5 {
        return legacy();
    }
    let Some(state) = overlay.producer(store, &(queue, partition, producer_id as u64)) else {
        return legacy();
    };
    if epoch < state.epoch {
        return Verdict::Fenced;
    }
    if epoch > state.epoch {
        // A new epoch starts its sequences over.
        return if first_seq == 0 { Verdict::New } else { Verdict::OutOfOrder };
    }
    if let Some(b) = state.batches.iter().find(|b| b.first_seq == first_seq && b.last_seq == last_seq) {
        return Verdict::Duplicate(b.first_offset);
    }
    if state.last_seq().is_some_and(|last| first_seq == next_sequence(last)) {
        return Verdict::New;
    }
    // A retry of a batch written before the upgrade, which its dedup rows
    // still answer; anything else is out of sequence.
    match legacy() {
        Verdict::Duplicate(offset) => Verdict::Duplicate(offset),
        _ => Verdict::OutOfOrder,
    }
}

/// The rule before catalogue 5, on dedup rows: a duplicate when the
/// batch's first record has its row; fenced once the first record of the
/// producer's next epoch has one; out of order when the record just before
/// it has none. Once retention dropped some of the partition's rows, or
/// the producer's state was forgotten there, a missing row proves no loss
/// and the batch is let through, as Kafka lets through the sequence of a
/// producer whose state it no longer has.
fn legacy_verdict(store: &Store, overlay: &Overlay, queue: u64, partition: u64, batch: &KafkaBatch) -> Verdict {
    let row = |id: Option<String>| id.and_then(|id| overlay.dedup(store, queue, partition, &transaction_hash(&id)));
    if let Some(offset) = row(batch.idempotent_transaction_id(0)) {
        return Verdict::Duplicate(offset);
    }
    if row(batch.next_epoch_transaction_id()).is_some() {
        return Verdict::Fenced;
    }
    let Some(preceding) = batch.preceding_transaction_id() else {
        return Verdict::New;
    };
    let rows_dropped = store.partition(queue, partition).is_some_and(|row| row.txns_start > 0);
    let forgotten = overlay.producer(store, &(queue, partition, FORGOTTEN)).is_some();
    match rows_dropped || forgotten || row(Some(preceding)).is_some() {
        true => Verdict::New,
        false => Verdict::OutOfOrder,
    }
}

/// The `ProducerBatch` recording an idempotent producer's batch written at
/// `offset`, with the producer's state updated in the overlay; none for a
/// producer that is not idempotent.
fn producer_batch(
    overlay: &mut Overlay,
    store: &Store,
    queue: u64,
    partition: u64,
    batch: &KafkaBatch,
    offset: u64,
    at_us: i64,
) -> Option<Effect> {
    let (producer_id, epoch, first_seq) = batch.producer()?;
    let key = (queue, partition, producer_id as u64);
    let last_seq = last_sequence(first_seq, batch.count);
    let mut state = overlay.producer(store, &key).unwrap_or_default();
    state.record(epoch, ProducerBatch { first_seq, last_seq, first_offset: offset }, at_us);
    overlay.put_producer(key, Some(state));
    Some(Effect::ProducerBatch {
        queue,
        partition,
        producer_id: producer_id as u64,
        epoch,
        first_seq,
        last_seq,
        first_offset: offset,
    })
}

/// The sequence after `seq`: Kafka's wrap from `i32::MAX` to 0.
fn next_sequence(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

/// The last sequence of a batch of `count` records from `first`, wrapping
/// as Kafka wraps.
fn last_sequence(first: i32, count: u32) -> i32 {
    ((i64::from(first) + i64::from(count) - 1) % (i64::from(i32::MAX) + 1)) as i32
}

#[cfg(test)]
mod tests {
    use crate::planner::command::{Answer, Command, ConfigureQueue, PushItem, PushOutcome, PushStatus};
    use crate::planner::testing::{fresh, kafka_batch, one_message_applied, plan, push, run_at, store_at_catalogue};
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
    fn a_kafka_record_leaves_no_dedup_row_and_its_producers_last_five_batches_answer_retries() {
        let (mut store, mut planner) = fresh();
        for (i, seq) in (0..30).step_by(3).enumerate() {
            let outcome = pushed(&mut planner, &mut store, 1 + i as i64, kafka_batch(7, 0, seq, 3, false));
            assert_eq!((outcome.status, outcome.offset), (PushStatus::Queued, seq as u64));
        }
        pushed(&mut planner, &mut store, 20, kafka_batch(-1, -1, -1, 4, false));
        assert_eq!(store.dedup.row_count(), 0, "a Kafka record made a dedup row");
        assert_eq!(store.producers.len(), 1, "one row for the one idempotent producer");
        let retry = pushed(&mut planner, &mut store, 21, kafka_batch(7, 0, 15, 3, false));
        assert_eq!((retry.status, retry.offset), (PushStatus::Duplicate, 15), "a retry of one of the last five");
        let older = pushed(&mut planner, &mut store, 22, kafka_batch(7, 0, 3, 3, false));
        assert_eq!(older.status, PushStatus::OutOfOrder, "a batch older than the last five is out of sequence");
        let next = pushed(&mut planner, &mut store, 23, kafka_batch(7, 0, 30, 3, false));
        assert_eq!((next.status, next.offset), (PushStatus::Queued, 34));
        let bumped = pushed(&mut planner, &mut store, 24, kafka_batch(7, 1, 5, 1, false));
        assert_eq!(bumped.status, PushStatus::OutOfOrder, "a new epoch starts at sequence 0");
        pushed(&mut planner, &mut store, 25, kafka_batch(7, 1, 0, 1, false));
        let stale = pushed(&mut planner, &mut store, 26, kafka_batch(7, 0, 33, 1, false));
        assert_eq!(stale.status, PushStatus::Fenced);
    }

    #[test]
    fn producers_active_before_the_upgrade_to_catalogue_5_keep_their_retries_answered() {
        let (mut planner, mut store) = (Planner::new(1, crate::log_id::LogId::default()), store_at_catalogue(4));
        pushed(&mut planner, &mut store, 1, kafka_batch(7, 0, 0, 3, false));
        pushed(&mut planner, &mut store, 2, kafka_batch(7, 0, 3, 3, false));
        assert_eq!(store.dedup.row_count(), 6, "before catalogue 5 every Kafka record has its row");
        let raise = crate::replicate::raft::version_gate::raise(5);
        run_at(&mut planner, &mut store, 3, Command::Kv(vec![raise]));
        assert_eq!(store.catalogue(), 5);
        let retry = pushed(&mut planner, &mut store, 4, kafka_batch(7, 0, 3, 3, false));
        assert_eq!((retry.status, retry.offset), (PushStatus::Duplicate, 3), "a retry of a batch before the upgrade");
        let next = pushed(&mut planner, &mut store, 5, kafka_batch(7, 0, 6, 3, false));
        assert_eq!((next.status, next.offset), (PushStatus::Queued, 6), "the batch after them, on their rows");
        assert_eq!(store.dedup.row_count(), 6, "no row for the batch written after the upgrade");
        let again = pushed(&mut planner, &mut store, 6, kafka_batch(7, 0, 0, 3, false));
        assert_eq!((again.status, again.offset), (PushStatus::Duplicate, 0), "an older retry, still on its rows");
        let skipped = pushed(&mut planner, &mut store, 7, kafka_batch(8, 0, 4, 1, false));
        assert_eq!(skipped.status, PushStatus::OutOfOrder, "a new producer past a lost first batch");
    }

    #[test]
    fn a_producer_silent_past_its_expiry_is_forgotten_and_taken_again_at_any_sequence() {
        let (mut store, mut planner) = fresh();
        const DAY_US: i64 = 86_400_000_000;
        pushed(&mut planner, &mut store, 1, kafka_batch(7, 0, 0, 3, false));
        pushed(&mut planner, &mut store, DAY_US / 2, kafka_batch(8, 0, 0, 3, false));
        let expire = Command::ExpireProducers { expiry_us: DAY_US };
        assert!(matches!(run_at(&mut planner, &mut store, DAY_US + 2, expire), Answer::Swept { rows: 1 }));
        assert!(store.producers.get(&(1, 1, 7)).is_none(), "producer 7 was silent for a day");
        assert!(store.producers.get(&(1, 1, 8)).is_some(), "producer 8 wrote half a day ago");
        let resumed = pushed(&mut planner, &mut store, DAY_US + 1, kafka_batch(7, 0, 40, 2, false));
        assert_eq!(resumed.status, PushStatus::Queued, "a forgotten producer is taken at its sequence");
    }

    #[test]
    fn an_ack_names_a_kafka_record_by_its_place() {
        let (mut store, mut planner) = fresh();
        pushed(&mut planner, &mut store, 1, kafka_batch(7, 0, 0, 3, false));
        let Command::Pop(mut request) = crate::planner::testing::pop("g") else { unreachable!() };
        request.queue = Some("t".into());
        let popped = run_at(&mut planner, &mut store, 2, Command::Pop(request));
        let Answer::Popped(claims) = popped else { panic!("a pop answered {popped:?}") };
        let lease = claims[0].lease_id.clone();
        let ack = |id: String| {
            Command::Ack(vec![crate::planner::command::AckItem {
                queue_id: 1,
                partition_id: 1,
                transaction_id: id,
                group: "g".into(),
                lease_id: Some(lease.clone()),
                status: crate::planner::command::AckStatus::Completed,
                error: None,
            }])
        };
        let Answer::Acked(by_id) = run_at(&mut planner, &mut store, 3, ack("kafka:7:0:0".into())) else { panic!() };
        assert!(by_id[0].refused.is_some(), "a Kafka record has no dedup row to resolve its id by");
        let placed = crate::qlog::kafka_batch::place_id(0);
        let Answer::Acked(by_place) = run_at(&mut planner, &mut store, 4, ack(placed)) else { panic!() };
        assert_eq!(by_place[0].refused, None, "{by_place:?}");
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
