//! Entries and their effects: what the planner decided, written to the qlog
//! and executed by apply on every node the same way.

use crate::log_id::LogId;
use crate::qlog::message_record::MessageRecord;
use crate::store::rows::{KvRow, LeaseRow, TimerRow};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    CreateQueue {
        id: u64,
        name: String,
    },
    CreatePartition {
        queue: u64,
        id: u64,
        name: String,
    },
    /// `count` messages at `first_offset..`; their payloads and transactionId
    /// hashes are in the entry's message record for this partition.
    Append {
        queue: u64,
        partition: u64,
        first_offset: u64,
        count: u32,
    },
    /// Creates the queue when `id` is new, else replaces its settings.
    ConfigureQueue {
        id: u64,
        name: String,
        namespace: Option<String>,
        task: Option<String>,
        options: String,
    },
    DeleteQueue {
        id: u64,
    },
    /// A consumer group's first pop on a queue: where it starts each partition.
    Subscribe {
        queue: u64,
        group: String,
        from_us: i64,
        conflate: bool,
    },
    /// A pop's claim on a partition. `start` places a cursor the group does
    /// not have yet; with `auto_ack` the offsets are done at delivery.
    Deliver {
        queue: u64,
        partition: u64,
        group: String,
        start: u64,
        lease: LeaseRow,
        auto_ack: bool,
    },
    Ack {
        queue: u64,
        partition: u64,
        group: String,
        offset: u64,
    },
    /// A failed delivery: counted, and the lease released.
    Fail {
        queue: u64,
        partition: u64,
        group: String,
        offset: u64,
        not_before_us: i64,
    },
    /// `failures`: the failed deliveries the dead-letter row reports.
    DeadLetter {
        queue: u64,
        partition: u64,
        group: String,
        offset: u64,
        error: Option<String>,
        failures: u32,
    },
    ExtendLease {
        queue: u64,
        partition: u64,
        group: String,
        expires_us: i64,
    },
    /// A lease that ran out: each message it still held counts one failure.
    LeaseExpired {
        queue: u64,
        partition: u64,
        group: String,
    },
    /// Moves a group's cursor to `offset`, forgetting its lease and failures.
    Seek {
        queue: u64,
        partition: u64,
        group: String,
        offset: u64,
    },
    /// A dead letter sent back: its row goes and the group's cursor delivers
    /// the offset again.
    Redeliver {
        queue: u64,
        partition: u64,
        group: String,
        offset: u64,
    },
    /// Forgets a group on a queue: its cursors, and with `metadata` its subscription.
    DeleteGroup {
        queue: u64,
        group: String,
        metadata: bool,
    },
    /// Writes a KV row (`key` is "namespace\0key").
    KvPut {
        key: String,
        row: KvRow,
    },
    KvDelete {
        key: String,
    },
    /// Schedules (or replaces) a timer; `key` is "queue\0timerKey".
    TimerSet {
        key: String,
        row: TimerRow,
    },
    /// A cancelled or fired timer.
    TimerDelete {
        key: String,
    },
    /// Retention's watermarks for a partition (`planner/retention.rs`):
    /// payloads below `log_start` and transactionId hashes below
    /// `txns_start` are gone; cursors behind `log_start` move up to it.
    Retain {
        queue: u64,
        partition: u64,
        log_start: u64,
        txns_start: u64,
    },
    /// An idle, empty partition deleted with its cursors
    /// (`planner/cleanup.rs`).
    DeletePartition {
        queue: u64,
        partition: u64,
    },
    /// The metadata string of a Kafka offset commit, kept with the group's
    /// cursor for OffsetFetch (empty: none). Last of the variants, so that
    /// entries written before it decode unchanged.
    CommitMetadata {
        queue: u64,
        partition: u64,
        group: String,
        metadata: String,
    },
    /// A raft membership entry's configuration from this entry on (format
    /// 4). Apply keeps the latest, with the entry's log id, as openraft's
    /// stored membership.
    Membership(crate::store::rows::Membership),
    /// A Kafka transactional id's coordinator state, as the entry leaves it
    /// (`planner/kafka_txn.rs`; effect catalogue 3).
    KafkaTxn {
        transactional_id: String,
        row: crate::store::rows::KafkaTxnRow,
    },
    /// An aborted Kafka transaction's stretch of a partition: producer
    /// `producer_id`'s records from `first_offset` up to its abort marker
    /// at `last_offset` are not committed data.
    AbortedTxn {
        queue: u64,
        partition: u64,
        producer_id: i64,
        first_offset: u64,
        last_offset: u64,
    },
    /// Stretches (first offset, count) of a partition that hold no message
    /// for HTTP readers: a transaction's marker, an aborted one's records.
    HideOffsets {
        queue: u64,
        partition: u64,
        spans: Vec<(u64, u32)>,
    },
    /// Records of a partition acquired one by one by a share group's member
    /// `holder` until `expires_us` (`planner/share.rs`; effect catalogue 4).
    /// `start` places a cursor the group does not have yet.
    Acquire {
        queue: u64,
        partition: u64,
        group: String,
        start: u64,
        holder: String,
        expires_us: i64,
        offsets: Vec<u64>,
    },
    /// Held records given back (released, or their lock ran out): each
    /// counts one failed delivery and is not delivered again before
    /// `not_before_us`.
    Release {
        queue: u64,
        partition: u64,
        group: String,
        offsets: Vec<u64>,
        not_before_us: i64,
    },
    /// The `offsets` that `holder` holds in the partition, held until
    /// `expires_us`; until `held::RETURNED_US`, given back uncounted as
    /// their member goes.
    Renew {
        queue: u64,
        partition: u64,
        group: String,
        holder: String,
        expires_us: i64,
        offsets: Vec<u64>,
    },
    /// An idempotent Kafka producer's batch, written at `first_offset` by
    /// the same entry's `Append` (effect catalogue 5): the producer's state
    /// in the partition (`rows::ProducerRow`) records it.
    ProducerBatch {
        queue: u64,
        partition: u64,
        producer_id: u64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
        first_offset: u64,
    },
    /// Producers silent in the partition for longer than their expiry are
    /// forgotten (effect catalogue 5): a later batch of theirs is taken as
    /// from a producer never seen, as Kafka takes it.
    ForgetProducers {
        queue: u64,
        partition: u64,
        producer_ids: Vec<u64>,
    },
    /// The partition's dedup rows below `below` are past their window
    /// (effect catalogue 5): a retry of one of those messages is stored as
    /// new. Unlike `Retain`'s `txns_start`, it does not need the payloads
    /// gone: a queue that keeps its messages forever keeps only the
    /// window's rows.
    ForgetDedup {
        queue: u64,
        partition: u64,
        below: u64,
    },
}

impl Effect {
    /// The effect's kind, as logs and `/health` name it (`kv_put`).
    pub fn name(&self) -> &'static str {
        match self {
            Effect::CreateQueue { .. } => "create_queue",
            Effect::CreatePartition { .. } => "create_partition",
            Effect::Append { .. } => "append",
            Effect::ConfigureQueue { .. } => "configure_queue",
            Effect::DeleteQueue { .. } => "delete_queue",
            Effect::Subscribe { .. } => "subscribe",
            Effect::Deliver { .. } => "deliver",
            Effect::Ack { .. } => "ack",
            Effect::Fail { .. } => "fail",
            Effect::DeadLetter { .. } => "dead_letter",
            Effect::ExtendLease { .. } => "extend_lease",
            Effect::LeaseExpired { .. } => "lease_expired",
            Effect::Seek { .. } => "seek",
            Effect::Redeliver { .. } => "redeliver",
            Effect::DeleteGroup { .. } => "delete_group",
            Effect::KvPut { .. } => "kv_put",
            Effect::KvDelete { .. } => "kv_delete",
            Effect::TimerSet { .. } => "timer_set",
            Effect::TimerDelete { .. } => "timer_delete",
            Effect::Retain { .. } => "retain",
            Effect::DeletePartition { .. } => "delete_partition",
            Effect::CommitMetadata { .. } => "commit_metadata",
            Effect::Membership(_) => "membership",
            Effect::KafkaTxn { .. } => "kafka_txn",
            Effect::AbortedTxn { .. } => "aborted_txn",
            Effect::HideOffsets { .. } => "hide_offsets",
            Effect::Acquire { .. } => "acquire",
            Effect::Release { .. } => "release",
            Effect::Renew { .. } => "renew",
            Effect::ProducerBatch { .. } => "producer_batch",
            Effect::ForgetProducers { .. } => "forget_producers",
            Effect::ForgetDedup { .. } => "forget_dedup",
        }
    }
    /// The queue whose log holds the effect's entry record; 0, the system
    /// log's, for KV, timer, retention, cleanup and Kafka coordinator effects.
    pub fn queue(&self) -> u64 {
        match self {
            // Retention and cleanup change rows only; in the system log, a
            // round that moves a thousand queues' watermarks syncs one file,
            // not a thousand. A queue's deletion goes there too: nothing is
            // written into a deleted queue's log, so reclaim can remove it
            // once the checkpoint holds the deletion, with no later write
            // needed (the gate may refuse every one).
            Effect::KvPut { .. }
            | Effect::KvDelete { .. }
            | Effect::TimerSet { .. }
            | Effect::TimerDelete { .. }
            | Effect::Retain { .. }
            | Effect::ForgetProducers { .. }
            | Effect::ForgetDedup { .. }
            | Effect::DeletePartition { .. }
            | Effect::DeleteQueue { .. }
            | Effect::Membership(_)
            | Effect::KafkaTxn { .. } => 0,
            Effect::CreateQueue { id, .. } | Effect::ConfigureQueue { id, .. } => *id,
            Effect::CreatePartition { queue, .. }
            | Effect::Append { queue, .. }
            | Effect::Subscribe { queue, .. }
            | Effect::Deliver { queue, .. }
            | Effect::Ack { queue, .. }
            | Effect::Fail { queue, .. }
            | Effect::DeadLetter { queue, .. }
            | Effect::ExtendLease { queue, .. }
            | Effect::Seek { queue, .. }
            | Effect::Redeliver { queue, .. }
            | Effect::LeaseExpired { queue, .. }
            | Effect::DeleteGroup { queue, .. }
            | Effect::CommitMetadata { queue, .. }
            | Effect::AbortedTxn { queue, .. }
            | Effect::HideOffsets { queue, .. }
            | Effect::Acquire { queue, .. }
            | Effect::Release { queue, .. }
            | Effect::Renew { queue, .. }
            | Effect::ProducerBatch { queue, .. } => *queue,
        }
    }
}

/// What the entry record stores of an entry: everything but the payloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryBody {
    /// The planner's clock when it decided, so apply never reads a clock.
    pub timestamp_us: i64,
    pub effects: Vec<Effect>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: LogId,
    /// The node that led in `id.term` and planned the entry.
    pub leader: u64,
    pub body: EntryBody,
    /// One message record per `Append`, in the same order.
    pub messages: Vec<MessageRecord>,
}

impl EntryBody {
    pub fn encode(&self) -> Vec<u8> {
        crate::codec::to_bytes(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, bincode::Error> {
        crate::codec::from_bytes(bytes)
    }
}

impl Entry {
    /// Every queue the entry touches.
    pub fn queues(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.body.effects.iter().map(Effect::queue).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}
