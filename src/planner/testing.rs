//! Planning entries by hand in unit tests: an entry planned and not yet
//! applied, as the replicator's pipeline leaves it while the disk syncs.

use crate::log_id::LogId;
use crate::message::Message;
use crate::planner::apply::apply;
use crate::planner::command::{
    AckItem, AckStatus, Answer, Claim, Command, PopRequest, PushBody, PushItem, Subscription,
};
use crate::planner::{Planned, Planner};
use crate::qlog::files::Location;
use crate::qlog::kafka_batch::KafkaBatch;
use crate::store::Store;
use bytes::Bytes;
use protocol::records::{encode_produced, Compression, PlainRecord, ProducedBatch};

/// Plans `command` at step `step` (its time is `step` milliseconds), as an
/// entry the store does not hold yet.
pub fn plan(planner: &mut Planner, store: &Store, step: u64, command: Command) -> Planned {
    planner.plan(store, command, step as i64 * 1_000)
}

/// Plans and applies `command` at `at_us`; answers what the planner
/// answered.
pub fn run_at(planner: &mut Planner, store: &mut Store, at_us: i64, command: Command) -> Answer {
    let planned = planner.plan(store, command, at_us);
    settle(store, &planned);
    planner.caught_up_with(store);
    planned.answer
}

/// Applies a planned entry; its message records sit nowhere real.
pub fn settle(store: &mut Store, planned: &Planned) {
    if let Some(entry) = &planned.entry {
        let at = Location { log: 1, segment: 1, pos: 0, frame_len: 0 };
        apply(store, entry, &vec![at; entry.messages.len()]);
    }
}

/// An empty store, and a planner whose first entry is index 1.
pub fn fresh() -> (Store, Planner) {
    (store_at_catalogue(crate::replicate::raft::version_gate::EFFECT_CATALOGUE), Planner::new(1, LogId::default()))
}

/// An empty store whose cluster writes effect catalogue `version`, as a
/// raised one has it (a row of the cluster's own KV namespace).
pub fn store_at_catalogue(version: u32) -> Store {
    let mut store = Store::default();
    let row = crate::store::rows::KvRow { value: version.to_string(), version: 0, expires_us: None, updated_us: 0 };
    store.put_kv(crate::store::CATALOGUE_ROW.to_string(), row);
    store
}

/// A store holding one applied message, "t1" in partition "p" of queue "q",
/// and the planner that planned it as the first entry.
pub fn one_message_applied() -> (Store, Planner) {
    let (mut store, mut planner) = fresh();
    let planned = plan(&mut planner, &store, 1, push("t1"));
    settle(&mut store, &planned);
    planner.caught_up_with(&store);
    (store, planner)
}

/// A delete of `group` on queue "q", cursors and row.
pub fn delete_group(group: &str) -> Command {
    Command::DeleteGroup { queue: Some("q".into()), group: group.into(), metadata: true }
}

/// One message with `transaction_id`, pushed to partition "p" of queue "q".
pub fn push(transaction_id: &str) -> Command {
    let message = Message::new(transaction_id.into(), b"1".to_vec());
    Command::Push(vec![PushItem::new("q".into(), "p".into(), &message, 0)])
}

/// A Kafka batch of `n` records for partition "0" of topic "t", by producer
/// `producer_id` at `epoch` from `sequence` on.
pub fn kafka_batch(producer_id: i64, epoch: i16, sequence: i32, n: usize, transactional: bool) -> PushItem {
    let records = (0..n)
        .map(|i| PlainRecord { timestamp_ms: 1, key: None, value: Some(Bytes::from(format!("v{i}"))), headers: vec![] })
        .collect();
    let produced = ProducedBatch {
        producer_id,
        producer_epoch: epoch,
        base_sequence: sequence,
        transactional,
        records,
        wire: Bytes::new(),
    };
    let wire = encode_produced(&produced, Compression::None).expect("a batch of plain records encodes");
    let batch = KafkaBatch::new(wire, None).expect("an encoded batch is one");
    PushItem { queue: "t".into(), partition: "0".into(), body: PushBody::Kafka(batch) }
}

/// A pop of one message of queue "q" for `group`, under a lease.
pub fn pop(group: &str) -> Command {
    Command::Pop(PopRequest {
        queue: Some("q".into()),
        partition: None,
        namespace: None,
        task: None,
        group: group.into(),
        batch: 1,
        partitions: 1,
        auto_ack: false,
        subscription: Subscription::All,
        conflation: false,
        lease_us: None,
    })
}

/// The one partition a planned pop claimed.
pub fn claimed(pop: &Planned) -> Claim {
    let Answer::Popped(claims) = &pop.answer else { panic!("pop answered {:?}", pop.answer) };
    claims[0].clone()
}

/// An ack of the message `transaction_id` that `claim` leased.
pub fn ack(claim: &Claim, transaction_id: &str, status: AckStatus) -> Command {
    Command::Ack(vec![AckItem {
        queue_id: claim.queue_id,
        partition_id: claim.partition_id,
        transaction_id: transaction_id.into(),
        group: claim.group.clone(),
        lease_id: Some(claim.lease_id.clone()),
        status,
        error: None,
    }])
}
