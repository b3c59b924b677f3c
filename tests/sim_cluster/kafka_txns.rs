//! Kafka transactions in the cluster simulator's workload: a few
//! transactional ids, each driven one step at a time through
//! InitProducerId, AddPartitionsToTxn, transactional produces and EndTxn
//! (commit or abort), now and then the coordinator's timeout abort, every
//! step sent to a node the seed picks and on to the leader; the model of
//! what each transaction is known to have become; and the checks of a
//! settled node: a committed transaction's records read back at their
//! offsets and visible to read_committed readers, an aborted one's are
//! hidden and in the partition's aborted-transaction index, markers are
//! hidden, and no record outside a transaction is.
//!
//! What a transaction became is known from answers only: a commit or abort
//! answered, or (for one whose commit was never asked) a later
//! InitProducerId or a fenced answer, which say that the epoch moved on and
//! the open transaction was aborted with it. A transaction whose commit
//! timed out and was never settled is checked for nothing but its records'
//! place in the log.

use queen::seams::planner::{Answer, Command, PushItem, PushStatus};
use queen::seams::planner::{KafkaTxnAnswer, KafkaTxnOp, TxnProducer, TxnRefusal};
use queen::seams::replicate::ProposeError;
use queen::seams::store::Store;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::BTreeMap;

const TRANSACTIONAL_IDS: &[&str] = &["x0", "x1", "x2"];
/// A short transaction timeout for some producers, so the coordinator's
/// own abort (`KafkaTxnOp::Expire`) fences some of them mid-transaction.
const SHORT_TIMEOUT_MS: i32 = 1_500;
const LONG_TIMEOUT_MS: i32 = 60_000;

/// A record a transaction wrote: (queue, partition, transactionId, offset).
pub type TxnRecord = (String, String, String, u64);

/// What the transactional clients were answered.
pub struct TxnModel {
    ids: BTreeMap<String, IdState>,
    /// The records of every transaction whose commit was answered, with its
    /// producer id.
    pub committed: Vec<(i64, TxnRecord)>,
    /// The records of every transaction known to be aborted.
    pub aborted: Vec<(i64, TxnRecord)>,
    /// Transactions whose end is not known (a commit that timed out).
    pub unsettled: u64,
    next_record: u64,
    next_producer_id: i64,
}

impl Default for TxnModel {
    fn default() -> Self {
        TxnModel {
            ids: TRANSACTIONAL_IDS.iter().map(|tid| (tid.to_string(), IdState::default())).collect(),
            committed: Vec::new(),
            aborted: Vec::new(),
            unsettled: 0,
            next_record: 0,
            next_producer_id: 0,
        }
    }
}

#[derive(Default)]
struct IdState {
    /// A step of this id is in flight.
    busy: bool,
    /// The producer the last InitProducerId gave, while it is usable.
    producer: Option<TxnProducer>,
    /// The transaction open under `producer`, or left open by an earlier
    /// producer until an answer tells what became of it.
    open: Option<Open>,
}

struct Open {
    producer_id: i64,
    /// The partitions added: (queue, partition).
    partitions: Vec<(String, String)>,
    records: Vec<TxnRecord>,
    /// An EndTxn commit was asked and not answered.
    commit_asked: bool,
}

/// A transactional step as sent, to settle its answer.
pub enum TxnSent {
    Init(String),
    Add(String, Vec<(String, String)>),
    Produce(String, Vec<(String, String, String)>),
    End(String, bool),
    Expire,
}

impl TxnModel {
    /// The next step of an idle transactional id, or none when every id is
    /// busy or the step needs a partition that node `to` does not know.
    /// `partitions`: those of answered pushes; `store`: node `to`'s, where
    /// its Kafka front end would look the partitions up.
    pub fn next(
        &mut self,
        rng: &mut StdRng,
        partitions: &[(String, String)],
        store: &Store,
    ) -> Option<(Command, TxnSent)> {
        if rng.gen_ratio(1, 10) {
            return Some((Command::KafkaTxn(Box::new(KafkaTxnOp::Expire)), TxnSent::Expire));
        }
        let idle: Vec<String> = self.ids.iter().filter(|(_, s)| !s.busy).map(|(tid, _)| tid.clone()).collect();
        let tid = idle.choose(rng)?.clone();
        let state = self.ids.get_mut(&tid).expect("an idle id has a state");
        let sent = match (state.producer, &state.open) {
            (None, _) => {
                self.next_producer_id += 1;
                let timeout_ms = if rng.gen_ratio(1, 4) { SHORT_TIMEOUT_MS } else { LONG_TIMEOUT_MS };
                let op = KafkaTxnOp::Init {
                    transactional_id: tid.clone(),
                    timeout_ms,
                    fresh_producer_id: 1_000 + self.next_producer_id,
                    producer: None,
                };
                (op, TxnSent::Init(tid.clone()))
            }
            (Some(producer), Some(open)) if !rng.gen_ratio(1, 8) => {
                if !open.records.is_empty() && rng.gen_ratio(2, 5) {
                    let commit = rng.gen_ratio(2, 3);
                    let op = KafkaTxnOp::End { transactional_id: tid.clone(), producer, commit };
                    (op, TxnSent::End(tid.clone(), commit))
                } else {
                    let mut keys = Vec::new();
                    for _ in 0..rng.gen_range(1..=3) {
                        let (q, p) = open.partitions.choose(rng).expect("an open transaction added a partition");
                        self.next_record += 1;
                        keys.push((q.clone(), p.clone(), format!("{tid}-r{}", self.next_record)));
                    }
                    let items = keys
                        .iter()
                        .map(|(q, p, t)| PushItem::new(q.clone(), p.clone(), &super::workload::message(q, p, t), 1))
                        .collect();
                    let op = KafkaTxnOp::Produce { transactional_id: tid.clone(), producer, items };
                    (op, TxnSent::Produce(tid.clone(), keys))
                }
            }
            // No transaction open, or one that adds another partition.
            (Some(producer), _) => {
                let mut chosen: Vec<(String, String)> = partitions.choose_multiple(rng, 2).cloned().collect();
                chosen.truncate(rng.gen_range(1..=2));
                let mut ids = Vec::new();
                for (q, p) in &chosen {
                    let queue = store.queue_id(q)?;
                    ids.push((queue, store.partition_id(queue, p)?));
                }
                if ids.is_empty() {
                    return None;
                }
                let op = KafkaTxnOp::AddPartitions { transactional_id: tid.clone(), producer, partitions: ids };
                (op, TxnSent::Add(tid.clone(), chosen))
            }
        };
        self.ids.get_mut(&tid).expect("an idle id has a state").busy = true;
        Some((Command::KafkaTxn(Box::new(sent.0)), sent.1))
    }

    /// Records what `answer` tells of the step `sent`, and checks it against
    /// what the model knows.
    pub fn settle(&mut self, sent: TxnSent, answer: Result<Answer, ProposeError>, violations: &mut Vec<String>) {
        let known = !matches!(answer, Err(ProposeError::Timeout | ProposeError::ShuttingDown));
        let tid = match &sent {
            TxnSent::Init(t) | TxnSent::Add(t, _) | TxnSent::Produce(t, _) | TxnSent::End(t, _) => t.clone(),
            TxnSent::Expire => return,
        };
        self.ids.get_mut(&tid).expect("a step's id has a state").busy = false;
        let answer = match answer {
            Ok(Answer::KafkaTxn(answer)) => answer,
            // Not planned: the step may be asked again as it is.
            Err(_) if known => return,
            // Perhaps applied: the producer may have moved on, so the id
            // starts again with an InitProducerId.
            Err(_) => {
                let state = self.ids.get_mut(&tid).expect("a step's id has a state");
                state.producer = None;
                if let (TxnSent::End(_, true), Some(open)) = (&sent, state.open.as_mut()) {
                    open.commit_asked = true;
                }
                return;
            }
            Ok(other) => {
                violations.push(format!("a Kafka transaction step of {tid} was answered {other:?}"));
                return;
            }
        };
        match (sent, answer) {
            (TxnSent::Init(_), KafkaTxnAnswer::Init(Ok(producer))) => {
                self.epoch_moved_on(&tid);
                self.ids.get_mut(&tid).expect("a step's id has a state").producer = Some(producer);
            }
            (TxnSent::Add(_, added), KafkaTxnAnswer::Done(Ok(()))) => {
                let state = self.ids.get_mut(&tid).expect("a step's id has a state");
                let producer_id = state.producer.expect("an added partition has a producer").id;
                let open = state.open.get_or_insert_with(|| Open {
                    producer_id,
                    partitions: Vec::new(),
                    records: Vec::new(),
                    commit_asked: false,
                });
                for key in added {
                    if !open.partitions.contains(&key) {
                        open.partitions.push(key);
                    }
                }
            }
            (TxnSent::Produce(_, keys), KafkaTxnAnswer::Produced(outcomes)) => {
                for ((q, p, t), outcome) in keys.into_iter().zip(outcomes) {
                    match outcome {
                        Ok(out) if out.status == PushStatus::Queued => {
                            let state = self.ids.get_mut(&tid).expect("a step's id has a state");
                            let open = state.open.as_mut().expect("a produce answered is in an open transaction");
                            open.records.push((q, p, t, out.offset));
                        }
                        Ok(out) => violations.push(format!("the fresh transactional record {t} was answered {out:?}")),
                        Err(refusal) => self.refused(&tid, refusal, violations),
                    }
                }
            }
            (TxnSent::End(_, commit), KafkaTxnAnswer::Done(Ok(()))) => {
                let state = self.ids.get_mut(&tid).expect("a step's id has a state");
                if let Some(open) = state.open.take() {
                    let records = open.records.into_iter().map(|r| (open.producer_id, r));
                    if commit {
                        self.committed.extend(records);
                    } else {
                        self.aborted.extend(records);
                    }
                }
            }
            (_, KafkaTxnAnswer::Done(Err(refusal))) => self.refused(&tid, refusal, violations),
            (_, answer) => violations.push(format!("a Kafka transaction step of {tid} was answered {answer:?}")),
        }
    }

    /// A refusal of a step of `tid`'s current producer.
    fn refused(&mut self, tid: &str, refusal: TxnRefusal, violations: &mut Vec<String>) {
        let state = self.ids.get_mut(tid).expect("a step's id has a state");
        if state.producer.is_none() {
            // A second refusal in one answer.
            return;
        }
        state.producer = None;
        match refusal {
            // Only the coordinator's timeout abort moves the epoch of a
            // producer in use: its open transaction was aborted with it.
            TxnRefusal::Fenced => self.epoch_moved_on(tid),
            other => violations
                .push(format!("a step of {tid}'s current producer in an open transaction was refused {other:?}")),
        }
    }

    /// The id's epoch moved past the producer of its open transaction (an
    /// InitProducerId answered, or a fence): that transaction was aborted,
    /// unless a commit of it was asked and not answered, which may have
    /// come first.
    fn epoch_moved_on(&mut self, tid: &str) {
        let state = self.ids.get_mut(tid).expect("a step's id has a state");
        if let Some(open) = state.open.take() {
            if open.commit_asked {
                self.unsettled += 1;
            } else {
                self.aborted.extend(open.records.into_iter().map(|r| (open.producer_id, r)));
            }
        }
    }
}

/// Checks a settled node's store against the transactions' model; `read`
/// reads the transactionId and value at an offset as a reader does.
pub fn check(
    id: u64,
    store: &Store,
    model: &TxnModel,
    read: impl Fn(u64, u64, u64) -> Result<(String, Vec<u8>), String>,
) -> Vec<String> {
    let mut broke = Vec::new();
    let ids = |q: &str, p: &str| store.queue_id(q).and_then(|queue| Some((queue, store.partition_id(queue, p)?)));
    for (producer_id, (q, p, t, offset)) in &model.committed {
        let Some((queue, partition)) = ids(q, p) else {
            broke.push(format!("node {id}: the partition {q}/{p} of committed record {t} is gone"));
            continue;
        };
        let value = super::workload::message(q, p, t).value_bytes().to_vec();
        match read(queue, partition, *offset) {
            Ok((found, v)) if found == *t && v == value => {}
            other => broke.push(format!("node {id}: committed record {t} at {q}/{p}@{offset} reads back as {other:?}")),
        }
        if store.is_kafka_hidden(queue, partition, *offset) {
            broke.push(format!(
                "node {id}: committed record {t} of producer {producer_id} at {q}/{p}@{offset} is hidden"
            ));
        }
    }
    for (producer_id, (q, p, t, offset)) in &model.aborted {
        let Some((queue, partition)) = ids(q, p) else {
            broke.push(format!("node {id}: the partition {q}/{p} of aborted record {t} is gone"));
            continue;
        };
        if !store.is_kafka_hidden(queue, partition, *offset) {
            broke.push(format!("node {id}: aborted record {t} at {q}/{p}@{offset} is visible to HTTP readers"));
        }
        let indexed = store
            .aborted_between(queue, partition, *offset, offset + 1)
            .iter()
            .any(|(producer, first)| producer == producer_id && first <= offset);
        if !indexed {
            broke.push(format!(
                "node {id}: aborted record {t} of producer {producer_id} at {q}/{p}@{offset} is in no aborted \
                 transaction of the partition's index, so read_committed consumers read it"
            ));
        }
    }
    broke
}
