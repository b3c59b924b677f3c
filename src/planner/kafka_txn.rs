//! The Kafka transaction coordinator's decisions (KIP-98 and KIP-447,
//! Kafka's transaction version 1). A transactional id's state is a row the
//! planner writes as an effect, so a new leader carries on every open
//! transaction where the old one left it. A transaction's end is one entry:
//! its commit or abort marker in every partition it wrote, its aborted
//! stretches, its offsets applied to their groups and the id's new state,
//! all applied together or not at all (`txn.rs`, present in all). Kafka's
//! prepare states therefore never last here.

use super::effect::Effect;
use super::items::{CursorCommit, PushBody, PushItem, PushOutcome, PushStatus};
use super::overlay::Overlay;
use super::{push, topics};
use crate::log_id::LogId;
use crate::qlog::kafka_batch::KafkaBatch;
use crate::qlog::message_record::MessageRecord;
use crate::store::rows::{KafkaTxnRow, KafkaTxnState, TxnOffset};
use crate::store::Store;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The most transactions one expiry entry aborts.
const MAX_EXPIRED_PER_ENTRY: usize = 100;

/// The producer a request names: its id and epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnProducer {
    pub id: i64,
    pub epoch: i16,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum KafkaTxnOp {
    /// InitProducerId with a transactional id: the id's producer with its
    /// epoch bumped (a new id's with `fresh_producer_id`), whatever it had
    /// open aborted. `producer`: the one the client names (KIP-360), which
    /// must be the id's current one.
    Init { transactional_id: String, timeout_ms: i32, fresh_producer_id: i64, producer: Option<TxnProducer> },
    /// AddPartitionsToTxn: (queue id, partition id) of each.
    AddPartitions { transactional_id: String, producer: TxnProducer, partitions: Vec<(u64, u64)> },
    /// AddOffsetsToTxn.
    AddGroup { transactional_id: String, producer: TxnProducer, group: String },
    /// TxnOffsetCommit: offsets the group's cursors move to if the
    /// transaction commits.
    CommitOffsets { transactional_id: String, producer: TxnProducer, offsets: Vec<CursorCommit> },
    /// A transactional produce: each batch lands only in a partition the
    /// open transaction added.
    Produce { transactional_id: String, producer: TxnProducer, items: Vec<PushItem> },
    /// EndTxn.
    End { transactional_id: String, producer: TxnProducer, commit: bool },
    /// Aborts every transaction open past its timeout at the entry's time,
    /// bumping its producer's epoch so the producer is fenced.
    Expire,
}

/// Why the coordinator refused a request, as Kafka names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnRefusal {
    /// The producer's epoch is older than the id's: a newer producer took
    /// the id, or the coordinator aborted its transaction.
    Fenced,
    /// The producer id is not the transactional id's, or the id is unknown.
    UnknownProducer,
    /// The request does not fit the transaction's state (a produce to a
    /// partition the transaction did not add, an end with none open).
    InvalidState,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum KafkaTxnAnswer {
    Init(Result<TxnProducer, TxnRefusal>),
    Done(Result<(), TxnRefusal>),
    /// One answer per produced item, in order.
    Produced(Vec<Result<PushOutcome, TxnRefusal>>),
    Expired {
        aborted: usize,
    },
}

pub struct PlannedTxn {
    pub effects: Vec<Effect>,
    pub messages: Vec<MessageRecord>,
    pub answer: KafkaTxnAnswer,
}

impl PlannedTxn {
    fn answer(answer: KafkaTxnAnswer) -> Self {
        Self { effects: Vec::new(), messages: Vec::new(), answer }
    }
}

pub fn plan(store: &Store, overlay: &mut Overlay, id: LogId, ts: i64, op: KafkaTxnOp) -> PlannedTxn {
    match op {
        KafkaTxnOp::Init { transactional_id, timeout_ms, fresh_producer_id, producer } => {
            plan_init(store, overlay, id, ts, transactional_id, timeout_ms, fresh_producer_id, producer)
        }
        KafkaTxnOp::AddPartitions { transactional_id, producer, partitions } => {
            change(store, overlay, ts, transactional_id, producer, |row| {
                for key in partitions {
                    row.partitions.entry(key).or_default();
                }
                Ok(())
            })
        }
        KafkaTxnOp::AddGroup { transactional_id, producer, group } => {
            change(store, overlay, ts, transactional_id, producer, |row| {
                row.groups.insert(group);
                Ok(())
            })
        }
        KafkaTxnOp::CommitOffsets { transactional_id, producer, offsets } => {
            let Some(row) = overlay.kafka_txn(store, &transactional_id) else {
                return PlannedTxn::answer(KafkaTxnAnswer::Done(Err(TxnRefusal::UnknownProducer)));
            };
            // Offsets belong to a transaction already open for their group
            // (AddOffsetsToTxn comes first).
            let open = row.state == KafkaTxnState::Ongoing;
            if !open || offsets.iter().any(|o| !row.groups.contains(&o.group)) {
                return PlannedTxn::answer(KafkaTxnAnswer::Done(Err(TxnRefusal::InvalidState)));
            }
            change(store, overlay, ts, transactional_id, producer, |row| {
                for o in offsets {
                    row.offsets.retain(|p| (p.queue, p.partition, &p.group) != (o.queue, o.partition, &o.group));
                    let CursorCommit { queue, partition, group, offset, metadata } = o;
                    row.offsets.push(TxnOffset { queue, partition, group, offset, metadata });
                }
                Ok(())
            })
        }
        KafkaTxnOp::Produce { transactional_id, producer, items } => {
            plan_produce(store, overlay, id, ts, transactional_id, producer, items)
        }
        KafkaTxnOp::End { transactional_id, producer, commit } => {
            plan_end(store, overlay, id, ts, transactional_id, producer, commit)
        }
        KafkaTxnOp::Expire => plan_expire(store, overlay, id, ts),
    }
}

/// The id's row if `producer` is its current producer.
fn current(
    store: &Store,
    overlay: &Overlay,
    transactional_id: &str,
    producer: TxnProducer,
) -> Result<KafkaTxnRow, TxnRefusal> {
    let row = overlay.kafka_txn(store, transactional_id).ok_or(TxnRefusal::UnknownProducer)?;
    if row.producer_id != producer.id {
        return Err(TxnRefusal::UnknownProducer);
    }
    if producer.epoch != row.epoch {
        return Err(TxnRefusal::Fenced);
    }
    Ok(row)
}

/// A change to the open transaction, which begins here if none is open.
fn change(
    store: &Store,
    overlay: &mut Overlay,
    ts: i64,
    transactional_id: String,
    producer: TxnProducer,
    apply: impl FnOnce(&mut KafkaTxnRow) -> Result<(), TxnRefusal>,
) -> PlannedTxn {
    let planned = current(store, overlay, &transactional_id, producer).and_then(|mut row| {
        let before = row.clone();
        if row.state != KafkaTxnState::Ongoing {
            row.state = KafkaTxnState::Ongoing;
            row.started_us = ts;
        }
        apply(&mut row)?;
        Ok((before, row))
    });
    match planned {
        Ok((before, row)) if before == row => PlannedTxn::answer(KafkaTxnAnswer::Done(Ok(()))),
        Ok((_, mut row)) => {
            row.updated_us = ts;
            let effects = vec![write(overlay, transactional_id, row)];
            PlannedTxn { effects, messages: vec![], answer: KafkaTxnAnswer::Done(Ok(())) }
        }
        Err(refusal) => PlannedTxn::answer(KafkaTxnAnswer::Done(Err(refusal))),
    }
}

fn write(overlay: &mut Overlay, transactional_id: String, row: KafkaTxnRow) -> Effect {
    overlay.put_kafka_txn(transactional_id.clone(), row.clone());
    Effect::KafkaTxn { transactional_id, row }
}

#[allow(clippy::too_many_arguments)]
fn plan_init(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    ts: i64,
    transactional_id: String,
    timeout_ms: i32,
    fresh_producer_id: i64,
    producer: Option<TxnProducer>,
) -> PlannedTxn {
    let fresh = KafkaTxnRow {
        producer_id: fresh_producer_id,
        epoch: 0,
        timeout_ms,
        state: KafkaTxnState::Empty,
        started_us: 0,
        updated_us: ts,
        partitions: BTreeMap::new(),
        groups: BTreeSet::new(),
        offsets: Vec::new(),
    };
    let Some(row) = overlay.kafka_txn(store, &transactional_id) else {
        let effects = vec![write(overlay, transactional_id, fresh.clone())];
        let answer = KafkaTxnAnswer::Init(Ok(TxnProducer { id: fresh.producer_id, epoch: 0 }));
        return PlannedTxn { effects, messages: vec![], answer };
    };
    // A producer that names itself (KIP-360, after an abortable error) must
    // be the id's current one; any other is a zombie.
    if let Some(p) = producer.filter(|p| p.id >= 0) {
        if p.id != row.producer_id || p.epoch != row.epoch {
            return PlannedTxn::answer(KafkaTxnAnswer::Init(Err(TxnRefusal::Fenced)));
        }
    }
    // The epoch is bumped; an exhausted one starts a new producer id.
    let next = match row.epoch.checked_add(1).filter(|e| *e < i16::MAX) {
        Some(epoch) => KafkaTxnRow { epoch, timeout_ms, ..row.clone() },
        None => fresh,
    };
    let (mut effects, mut messages) = (Vec::new(), Vec::new());
    if row.state == KafkaTxnState::Ongoing {
        // What the old producer left open is aborted under the new epoch,
        // which fences it.
        let (e, m) = end_effects(store, overlay, id, ts, &row, false, next.epoch.max(row.epoch));
        effects.extend(e);
        messages.extend(m);
    }
    let next = KafkaTxnRow { state: KafkaTxnState::Empty, updated_us: ts, ..closed(next) };
    let answer = KafkaTxnAnswer::Init(Ok(TxnProducer { id: next.producer_id, epoch: next.epoch }));
    effects.push(write(overlay, transactional_id, next));
    PlannedTxn { effects, messages, answer }
}

/// The row with no transaction open.
fn closed(row: KafkaTxnRow) -> KafkaTxnRow {
    KafkaTxnRow { partitions: BTreeMap::new(), groups: BTreeSet::new(), offsets: Vec::new(), started_us: 0, ..row }
}

fn plan_produce(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    ts: i64,
    transactional_id: String,
    producer: TxnProducer,
    items: Vec<PushItem>,
) -> PlannedTxn {
    let row = current(store, overlay, &transactional_id, producer);
    // Per item, the partition it lands in, or why it may not.
    let checks: Vec<Result<(u64, u64), TxnRefusal>> = items
        .iter()
        .map(|item| {
            let row = row.as_ref().map_err(|r| *r)?;
            let queue = overlay.queue_id(store, &item.queue).ok_or(TxnRefusal::InvalidState)?;
            let partition = overlay.partition_id(store, queue, &item.partition).ok_or(TxnRefusal::InvalidState)?;
            let added = row.state == KafkaTxnState::Ongoing && row.partitions.contains_key(&(queue, partition));
            added.then_some((queue, partition)).ok_or(TxnRefusal::InvalidState)
        })
        .collect();
    let accepted: Vec<PushItem> =
        items.into_iter().zip(&checks).filter(|(_, c)| c.is_ok()).map(|(item, _)| item).collect();
    let counts: Vec<u32> = accepted.iter().map(PushItem::count).collect();
    if accepted.is_empty() {
        let answers = checks.into_iter().map(|c| Err(c.expect_err("no item was accepted"))).collect();
        return PlannedTxn::answer(KafkaTxnAnswer::Produced(answers));
    }
    let mut row = row.expect("an item was accepted, so the producer is current");
    let pushed = push::plan_push(store, overlay, id, ts, accepted);
    let mut outcomes = pushed.outcomes.into_iter().zip(counts);
    let mut effects = pushed.effects;
    let answers: Vec<Result<PushOutcome, TxnRefusal>> = checks
        .into_iter()
        .map(|check| {
            let key = check?;
            let (outcome, count) = outcomes.next().expect("one outcome per accepted item");
            // The partition's last stable offset holds at the transaction's
            // first record there; an abort hides every stretch it wrote.
            if outcome.status == PushStatus::Queued {
                row.partitions.entry(key).or_default().push((outcome.offset, count));
            }
            Ok(outcome)
        })
        .collect();
    row.updated_us = ts;
    effects.push(write(overlay, transactional_id, row));
    PlannedTxn { effects, messages: pushed.messages, answer: KafkaTxnAnswer::Produced(answers) }
}

fn plan_end(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    ts: i64,
    transactional_id: String,
    producer: TxnProducer,
    commit: bool,
) -> PlannedTxn {
    let row = match current(store, overlay, &transactional_id, producer) {
        Ok(row) => row,
        Err(refusal) => return PlannedTxn::answer(KafkaTxnAnswer::Done(Err(refusal))),
    };
    match (row.state, commit) {
        (KafkaTxnState::Ongoing, _) => {}
        // A retried end that already happened.
        (KafkaTxnState::CompleteCommit, true) | (KafkaTxnState::CompleteAbort, false) => {
            return PlannedTxn::answer(KafkaTxnAnswer::Done(Ok(())));
        }
        _ => return PlannedTxn::answer(KafkaTxnAnswer::Done(Err(TxnRefusal::InvalidState))),
    }
    let (mut effects, messages) = end_effects(store, overlay, id, ts, &row, commit, row.epoch);
    let state = if commit { KafkaTxnState::CompleteCommit } else { KafkaTxnState::CompleteAbort };
    effects.push(write(overlay, transactional_id, KafkaTxnRow { state, updated_us: ts, ..closed(row) }));
    PlannedTxn { effects, messages, answer: KafkaTxnAnswer::Done(Ok(())) }
}

fn plan_expire(store: &Store, overlay: &mut Overlay, id: LogId, ts: i64) -> PlannedTxn {
    let expired: Vec<(String, KafkaTxnRow)> = overlay
        .kafka_txn_rows(store)
        .into_iter()
        .filter(|(_, row)| row.state == KafkaTxnState::Ongoing && is_expired(row, ts))
        .take(MAX_EXPIRED_PER_ENTRY)
        .collect();
    let (mut effects, mut messages) = (Vec::new(), Vec::new());
    let aborted = expired.len();
    for (transactional_id, row) in expired {
        // The bump fences the producer: its next request meets an older
        // epoch than the id's.
        let epoch = row.epoch.saturating_add(1);
        let (e, m) = end_effects(store, overlay, id, ts, &row, false, epoch);
        effects.extend(e);
        messages.extend(m);
        let next = KafkaTxnRow { epoch, state: KafkaTxnState::CompleteAbort, updated_us: ts, ..closed(row) };
        effects.push(write(overlay, transactional_id, next));
    }
    PlannedTxn { effects, messages, answer: KafkaTxnAnswer::Expired { aborted } }
}

/// Whether an open transaction has outlived its timeout at `now_us`.
pub fn is_expired(row: &KafkaTxnRow, now_us: i64) -> bool {
    row.started_us.saturating_add(i64::from(row.timeout_ms.max(0)) * 1000) <= now_us
}

/// The effects that end `row`'s open transaction: a marker (under
/// `marker_epoch`) in every partition it wrote, each aborted stretch, and
/// on a commit its offsets moved into their groups.
#[allow(clippy::too_many_arguments)]
fn end_effects(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    ts: i64,
    row: &KafkaTxnRow,
    commit: bool,
    marker_epoch: i16,
) -> (Vec<Effect>, Vec<MessageRecord>) {
    let wire = protocol::markers::marker_batch(row.producer_id, marker_epoch, commit, ts.div_euclid(1000));
    let marker = KafkaBatch::new(wire, None).expect("a marker batch is a batch");
    // Only partitions the transaction wrote need a marker: a consumer of
    // any other has nothing of it to skip or wait for.
    type Written<'a> = Vec<((u64, u64), &'a Vec<(u64, u32)>)>;
    let (written, items): (Written, Vec<PushItem>) = row
        .partitions
        .iter()
        .filter(|(&(q, p), spans)| !spans.is_empty() && overlay.partition_exists(store, q, p))
        .filter_map(|(&(q, p), spans)| {
            let queue = store.queue_name(q)?.to_string();
            let partition = store.partition(q, p)?.name.clone();
            Some((((q, p), spans), PushItem { queue, partition, body: PushBody::Kafka(marker.clone()) }))
        })
        .unzip();
    let pushed = push::plan_push(store, overlay, id, ts, items);
    let mut effects = pushed.effects;
    if commit {
        let commits = row
            .offsets
            .iter()
            .map(|o| CursorCommit {
                queue: o.queue,
                partition: o.partition,
                group: o.group.clone(),
                offset: o.offset,
                metadata: o.metadata.clone(),
            })
            .collect();
        effects.extend(topics::plan_commits(store, overlay, commits));
    }
    for (((queue, partition), spans), marker) in written.into_iter().zip(&pushed.outcomes) {
        let (queue, partition) = (queue, partition);
        // An HTTP reader skips the marker, and an aborted transaction's records.
        let mut hidden = vec![(marker.offset, 1)];
        if !commit {
            let first_offset = spans.first().expect("a written partition has a stretch").0;
            let (producer_id, last_offset) = (row.producer_id, marker.offset);
            effects.push(Effect::AbortedTxn { queue, partition, producer_id, first_offset, last_offset });
            hidden.splice(0..0, spans.iter().copied());
        }
        effects.push(Effect::HideOffsets { queue, partition, spans: hidden });
    }
    (effects, pushed.messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{Answer, Command};
    use crate::planner::testing::{fresh, kafka_batch, run_at};
    use crate::planner::Planner;

    const TID: &str = "tid";

    fn ask(planner: &mut Planner, store: &mut Store, at_us: i64, op: KafkaTxnOp) -> KafkaTxnAnswer {
        match run_at(planner, store, at_us, Command::KafkaTxn(Box::new(op))) {
            Answer::KafkaTxn(answer) => answer,
            other => panic!("a coordinator request answered {other:?}"),
        }
    }

    fn init(planner: &mut Planner, store: &mut Store, at_us: i64, fresh_producer_id: i64) -> TxnProducer {
        let op = KafkaTxnOp::Init { transactional_id: TID.into(), timeout_ms: 1000, fresh_producer_id, producer: None };
        match ask(planner, store, at_us, op) {
            KafkaTxnAnswer::Init(Ok(p)) => p,
            other => panic!("init answered {other:?}"),
        }
    }

    /// A store holding topic "t" with partition "0" (ids 1 and 1), and the
    /// planner after it.
    fn with_topic() -> (Store, Planner) {
        let (mut store, mut planner) = fresh();
        let create = Command::CreateTopic { queue: "t".into(), partitions: 1, options: Default::default() };
        run_at(&mut planner, &mut store, 1, create);
        (store, planner)
    }

    fn produce(
        planner: &mut Planner,
        store: &mut Store,
        at: i64,
        p: TxnProducer,
        seq: i32,
        n: usize,
    ) -> Vec<Result<PushOutcome, TxnRefusal>> {
        let op = KafkaTxnOp::Produce {
            transactional_id: TID.into(),
            producer: p,
            items: vec![kafka_batch(p.id, p.epoch, seq, n, true)],
        };
        match ask(planner, store, at, op) {
            KafkaTxnAnswer::Produced(answers) => answers,
            other => panic!("a produce answered {other:?}"),
        }
    }

    fn add(planner: &mut Planner, store: &mut Store, at: i64, p: TxnProducer) -> KafkaTxnAnswer {
        let op = KafkaTxnOp::AddPartitions { transactional_id: TID.into(), producer: p, partitions: vec![(1, 1)] };
        ask(planner, store, at, op)
    }

    fn end(planner: &mut Planner, store: &mut Store, at: i64, p: TxnProducer, commit: bool) -> KafkaTxnAnswer {
        ask(planner, store, at, KafkaTxnOp::End { transactional_id: TID.into(), producer: p, commit })
    }

    #[test]
    fn a_commit_writes_a_marker_moves_the_last_stable_offset_and_hides_only_the_marker() {
        let (mut store, mut planner) = with_topic();
        let p = init(&mut planner, &mut store, 2, 7);
        assert_eq!(p, TxnProducer { id: 7, epoch: 0 });
        let refused = produce(&mut planner, &mut store, 3, p, 0, 2);
        assert_eq!(refused, vec![Err(TxnRefusal::InvalidState)], "a partition not added takes no record");
        assert!(matches!(add(&mut planner, &mut store, 4, p), KafkaTxnAnswer::Done(Ok(()))));
        let written = produce(&mut planner, &mut store, 5, p, 0, 3);
        assert_eq!(written[0].as_ref().unwrap().offset, 0);
        assert_eq!(store.last_stable_offset(1, 1), 0, "the open transaction holds the last stable offset");
        assert!(matches!(end(&mut planner, &mut store, 6, p, true), KafkaTxnAnswer::Done(Ok(()))));
        assert_eq!(store.partition(1, 1).unwrap().next_offset, 4, "three records and the marker");
        assert_eq!(store.last_stable_offset(1, 1), 4);
        assert!((0..3).all(|o| !store.is_kafka_hidden(1, 1, o)) && store.is_kafka_hidden(1, 1, 3));
        assert!(store.aborted_between(1, 1, 0, 4).is_empty());
        assert_eq!(store.kafka_txn(TID).unwrap().state, KafkaTxnState::CompleteCommit);
        // A retried commit is answered as done; an abort now does not fit.
        assert!(matches!(end(&mut planner, &mut store, 7, p, true), KafkaTxnAnswer::Done(Ok(()))));
        assert!(matches!(
            end(&mut planner, &mut store, 8, p, false),
            KafkaTxnAnswer::Done(Err(TxnRefusal::InvalidState))
        ));
    }

    #[test]
    fn an_abort_indexes_and_hides_its_records_and_its_marker() {
        let (mut store, mut planner) = with_topic();
        let p = init(&mut planner, &mut store, 2, 7);
        add(&mut planner, &mut store, 3, p);
        produce(&mut planner, &mut store, 4, p, 0, 2);
        assert!(matches!(end(&mut planner, &mut store, 5, p, false), KafkaTxnAnswer::Done(Ok(()))));
        assert_eq!(store.aborted_between(1, 1, 0, 3), vec![(7, 0)]);
        assert!((0..3).all(|o| store.is_kafka_hidden(1, 1, o)));
        assert_eq!(store.last_stable_offset(1, 1), 3);
    }

    #[test]
    fn a_new_init_aborts_what_the_old_producer_left_open_and_fences_it() {
        let (mut store, mut planner) = with_topic();
        let old = init(&mut planner, &mut store, 2, 7);
        add(&mut planner, &mut store, 3, old);
        produce(&mut planner, &mut store, 4, old, 0, 2);
        let new = init(&mut planner, &mut store, 5, 8);
        assert_eq!(new, TxnProducer { id: 7, epoch: 1 }, "the id keeps its producer with the epoch bumped");
        assert_eq!(store.aborted_between(1, 1, 0, 3), vec![(7, 0)], "the open transaction was aborted");
        assert_eq!(store.last_stable_offset(1, 1), 3);
        assert!(matches!(end(&mut planner, &mut store, 6, old, true), KafkaTxnAnswer::Done(Err(TxnRefusal::Fenced))));
        assert_eq!(produce(&mut planner, &mut store, 7, old, 2, 1), vec![Err(TxnRefusal::Fenced)]);
    }

    #[test]
    fn a_transaction_past_its_timeout_is_aborted_with_its_epoch_bumped() {
        let (mut store, mut planner) = with_topic();
        let p = init(&mut planner, &mut store, 2, 7);
        add(&mut planner, &mut store, 1_000, p);
        produce(&mut planner, &mut store, 1_001, p, 0, 1);
        let early = ask(&mut planner, &mut store, 500_000, KafkaTxnOp::Expire);
        assert!(matches!(early, KafkaTxnAnswer::Expired { aborted: 0 }), "{early:?}");
        let late = ask(&mut planner, &mut store, 1_001_000, KafkaTxnOp::Expire);
        assert!(matches!(late, KafkaTxnAnswer::Expired { aborted: 1 }), "{late:?}");
        let row = store.kafka_txn(TID).unwrap();
        assert_eq!((row.state, row.epoch), (KafkaTxnState::CompleteAbort, 1));
        assert!(matches!(
            end(&mut planner, &mut store, 1_002_000, p, true),
            KafkaTxnAnswer::Done(Err(TxnRefusal::Fenced))
        ));
    }

    #[test]
    fn offsets_committed_in_a_transaction_reach_the_group_only_at_its_commit() {
        let (mut store, mut planner) = with_topic();
        let p = init(&mut planner, &mut store, 2, 7);
        let offsets = vec![CursorCommit { queue: 1, partition: 1, group: "g".into(), offset: 0, metadata: "m".into() }];
        let early = KafkaTxnOp::CommitOffsets { transactional_id: TID.into(), producer: p, offsets: offsets.clone() };
        assert!(matches!(ask(&mut planner, &mut store, 3, early), KafkaTxnAnswer::Done(Err(TxnRefusal::InvalidState))));
        let group = KafkaTxnOp::AddGroup { transactional_id: TID.into(), producer: p, group: "g".into() };
        ask(&mut planner, &mut store, 4, group);
        let commit = KafkaTxnOp::CommitOffsets { transactional_id: TID.into(), producer: p, offsets };
        assert!(matches!(ask(&mut planner, &mut store, 5, commit), KafkaTxnAnswer::Done(Ok(()))));
        assert!(store.cursors.get(&(1, 1, "g".into())).is_none(), "pending until the commit");
        end(&mut planner, &mut store, 6, p, true);
        assert_eq!(store.commit_metadata.get(&(1, 1, "g".into())).map(String::as_str), Some("m"));
        assert!(store.cursors.get(&(1, 1, "g".into())).is_some());
    }
}
