//! Commands: what a front end asks of the planner, and what it answers.

use crate::message::{transaction_hash, Message};
use crate::qlog::kafka_batch::KafkaBatch;
use crate::qlog::message_record::StoredPayload;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Command {
    /// Appends messages, possibly to many queues and partitions, atomically.
    Push(Vec<PushItem>),
    Configure(ConfigureQueue),
    DeleteQueue {
        queue: String,
    },
    Pop(PopRequest),
    Ack(Vec<AckItem>),
    ExtendLease {
        lease_id: String,
    },
    /// Moves a group's cursors on a queue to its end, or to the first message
    /// stored at or after a time.
    SeekGroup {
        queue: String,
        group: String,
        to: SeekTo,
    },
    /// Forgets a group on one queue, or on every queue.
    DeleteGroup {
        queue: Option<String>,
        group: String,
        metadata: bool,
    },
    /// Re-subscribes a group from a time on every queue it consumes.
    Resubscribe {
        group: String,
        from_us: i64,
    },
    /// Pushes, fenced acks and KV operations as one atomic entry.
    Transaction(super::transaction::Bundle),
    /// Schedules, reschedules and cancels timers.
    Timers(Vec<super::timers::TimerOp>),
    /// Fires the timers that are due.
    FireTimers,
    /// Lock and semaphore operations, each judged on its own.
    Locks(Vec<super::locks::LockOp>),
    /// KV operations, applied together or (when a required one loses) not at all.
    Kv(Vec<super::kv::KvOp>),
    /// Creates a queue with `partitions` partitions (a Kafka topic), and
    /// with `options` when any are given.
    CreateTopic {
        queue: String,
        partitions: u32,
        options: serde_json::Map<String, serde_json::Value>,
    },
    /// Grows a queue to `total` partitions.
    AddPartitions {
        queue: String,
        total: u32,
    },
    /// Places consumer-group cursors (Kafka offset commits).
    CommitOffsets(Vec<CursorCommit>),
    /// Deletes KV rows whose time to live ran out, so expired keys stop
    /// taking memory and checkpoint space.
    SweepKv,
    /// Moves retention's watermarks on the partitions (queue id, partition
    /// id) the scanner found due (`planner/retention.rs`).
    Retain {
        partitions: Vec<(u64, u64)>,
        txn_window_min_s: u64,
    },
    /// Deletes the partitions (queue id, partition id) the scanner found
    /// idle for `idle_us` and empty (`planner/cleanup.rs`).
    CleanupPartitions {
        partitions: Vec<(u64, u64)>,
        idle_us: i64,
    },
    /// Sends a dead-lettered message back to its groups (all of them, or
    /// the one named), to be delivered again.
    Redeliver {
        queue: u64,
        partition: u64,
        offset: u64,
        group: Option<String>,
    },
    /// A streams query registered, or a streams cycle committed whole
    /// (`planner/streams.rs`). Last of the variants, so that commands
    /// forwarded by a node without it decode unchanged. Boxed: a cycle is
    /// far larger than the other commands.
    Streams(Box<super::streams::StreamsOp>),
    /// A Kafka transaction coordinator request (`planner/kafka_txn.rs`).
    /// After `Streams`, for the same reason.
    KafkaTxn(Box<super::kafka_txn::KafkaTxnOp>),
}

/// A group's cursor on a partition, set to `offset`: the next it consumes,
/// with the commit's metadata string (Kafka's; empty for none).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CursorCommit {
    pub queue: u64,
    pub partition: u64,
    pub group: String,
    pub offset: u64,
    pub metadata: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SeekTo {
    End,
    Time(i64),
}

/// The consumer group of queue mode: one cursor shared by every consumer.
pub const QUEUE_MODE: &str = "__QUEUE_MODE__";

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ConfigureQueue {
    pub queue: String,
    pub namespace: Option<String>,
    pub task: Option<String>,
    pub options: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PopRequest {
    pub queue: Option<String>,
    pub partition: Option<String>,
    pub namespace: Option<String>,
    pub task: Option<String>,
    pub group: String,
    /// The most messages, over all partitions claimed.
    pub batch: usize,
    /// The most partitions one pop claims.
    pub partitions: usize,
    pub auto_ack: bool,
    /// Where a group new to the queue starts: at its first pop (`new`),
    /// from a time, or from the beginning.
    pub subscription: Subscription,
    /// Ask for last-value delivery (a group's first pop fixes its policy).
    pub conflation: bool,
    /// This pop's lease length in microseconds, instead of the queue's `leaseTime`.
    pub lease_us: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Subscription {
    All,
    New,
    From(i64),
}

/// One claimed partition of a pop.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Claim {
    pub queue_id: u64,
    pub queue: String,
    pub partition_id: u64,
    pub partition: String,
    pub group: String,
    /// Empty for an auto-acknowledged pop.
    pub lease_id: String,
    pub lease_expires_us: i64,
    /// (offset, delivery attempt) of each message delivered.
    pub messages: Vec<(u64, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AckStatus {
    Completed,
    Failed,
    DeadLetter,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct AckItem {
    pub queue_id: u64,
    pub partition_id: u64,
    pub transaction_id: String,
    pub group: String,
    pub lease_id: Option<String>,
    pub status: AckStatus,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct AckOutcome {
    /// Why the ack was refused; none when it was applied.
    pub refused: Option<super::consume::Refused>,
    pub dead_lettered: bool,
    pub lease_released: bool,
    /// A completion of a message already done for the group: nothing changed.
    pub noop: bool,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PushItem {
    pub queue: String,
    pub partition: String,
    pub body: PushBody,
}

/// What a push item brings: one message, or a Kafka batch of several.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum PushBody {
    Message {
        transaction_id: String,
        /// The encoded message, compressed as the qlog will store it.
        payload: StoredPayload,
    },
    /// Stored as it came; its messages' transactionIds are derived from
    /// its header or from where they land (`KafkaBatch::transaction_id`),
    /// and it is a duplicate, whole, when its first message is.
    Kafka(KafkaBatch),
}

impl PushItem {
    /// Encodes and compresses `message` (at `zstd_level`) on the caller's
    /// thread, so the sequencer only copies bytes.
    pub fn new(queue: String, partition: String, message: &Message, zstd_level: i32) -> Self {
        let payload = StoredPayload::prepare(message.encode(), zstd_level);
        Self { queue, partition, body: PushBody::Message { transaction_id: message.transaction_id.clone(), payload } }
    }

    /// The transactionId of a message; none for a Kafka batch, whose
    /// messages' ids are derived as they are planned.
    pub fn transaction_id(&self) -> Option<&str> {
        match &self.body {
            PushBody::Message { transaction_id, .. } => Some(transaction_id),
            PushBody::Kafka(_) => None,
        }
    }

    /// The hash under which the item would be a duplicate of one stored
    /// before: the message's transactionId, or a Kafka batch's first
    /// message's when its producer was idempotent (the place of any other
    /// is new by construction).
    pub fn dedup_hash(&self) -> Option<[u8; 16]> {
        match &self.body {
            PushBody::Message { transaction_id, .. } => Some(transaction_hash(transaction_id)),
            PushBody::Kafka(batch) => batch.idempotent_transaction_id(0).map(|id| transaction_hash(&id)),
        }
    }

    /// For an idempotent producer's Kafka batch, the hashes that decide
    /// whether it may be written: the record its producer sent just before
    /// it (absent: a batch before it was lost), and the first record of the
    /// producer's next epoch (present: this epoch is fenced).
    pub fn producer_order_hashes(&self) -> (Option<[u8; 16]>, Option<[u8; 16]>) {
        match &self.body {
            PushBody::Message { .. } => (None, None),
            PushBody::Kafka(batch) => (
                batch.preceding_transaction_id().map(|id| transaction_hash(&id)),
                batch.next_epoch_transaction_id().map(|id| transaction_hash(&id)),
            ),
        }
    }

    /// The messages it brings.
    pub fn count(&self) -> u32 {
        match &self.body {
            PushBody::Message { .. } => 1,
            PushBody::Kafka(batch) => batch.count,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PushStatus {
    Queued,
    /// The transactionId was pushed before: `offset` is the original one.
    Duplicate,
    /// Not written: an idempotent producer's batch whose preceding one is
    /// not stored (lost before it was durable); the producer sends it again.
    OutOfOrder,
    /// Not written: an idempotent producer's batch from an epoch its
    /// producer has moved past.
    Fenced,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PushOutcome {
    pub queue_id: u64,
    pub partition_id: u64,
    pub offset: u64,
    pub status: PushStatus,
    /// The entry's time, which its message record carries (µs since the epoch).
    pub timestamp_us: i64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Answer {
    Pushed(Vec<PushOutcome>),
    Configured {
        queue_id: u64,
        options: serde_json::Value,
    },
    Deleted {
        existed: bool,
    },
    Popped(Vec<Claim>),
    Acked(Vec<AckOutcome>),
    Extended {
        renewed: usize,
        expires_us: Option<i64>,
    },
    /// Partitions whose cursors a group command moved or removed.
    GroupChanged {
        partitions: usize,
    },
    Transaction(super::transaction::BundleAnswer),
    Timers(Vec<super::timers::TimerResult>),
    Fired {
        timers: usize,
    },
    Locks(Vec<super::locks::LockResult>),
    Kv(super::kv::KvAnswer),
    /// A push refused whole: it would take a queue past its `maxSize`.
    QueueFull(super::push::QueueFull),
    /// Partitions whose retention watermarks moved.
    Retained {
        partitions: usize,
    },
    /// Idle, empty partitions deleted.
    CleanedUp {
        partitions: usize,
    },
    /// Expired KV rows deleted.
    Swept {
        rows: usize,
    },
    /// A queue's partitions were created or grown; `existed` when the queue
    /// was there before.
    PartitionsCreated {
        existed: bool,
        created: usize,
    },
    Streams(super::streams::StreamsAnswer),
    KafkaTxn(super::kafka_txn::KafkaTxnAnswer),
}
