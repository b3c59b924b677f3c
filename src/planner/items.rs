//! What commands carry and answers hold: the items of a push, a pop and an
//! ack, their outcomes, and why an ack is refused. A leaf of the planner:
//! every planner module builds on these, and they name none of them.

use crate::message::{transaction_hash, Message};
use crate::qlog::kafka_batch::KafkaBatch;
use crate::qlog::message_record::StoredPayload;

/// Why an ack is refused; stable strings the client shows.
pub const REFUSED_UNKNOWN_MESSAGE: &str = "unknown_message";
/// The partition holds no message with the transactionId (never pushed, or
/// its hash is gone with retention).
pub const REFUSED_UNRESOLVABLE: &str = "unresolvable_transaction_id";
/// A failure or dead-letter for a message the group's cursor is already past.
pub const REFUSED_ALREADY_COMMITTED: &str = "already_committed";
pub const REFUSED_NO_LEASE: &str = "lease_expired_or_not_held";

/// Every reason an ack is refused for: an answer forwarded from the leader
/// names its reason by text, and reads back as the same constant.
const REFUSALS: [&str; 4] =
    [REFUSED_UNKNOWN_MESSAGE, REFUSED_UNRESOLVABLE, REFUSED_ALREADY_COMMITTED, REFUSED_NO_LEASE];

/// The reason an ack was refused: one of the constants above. A
/// forwarded answer names it by text, and it reads back as the constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused(pub &'static str);

impl serde::Serialize for Refused {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Refused {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        REFUSALS
            .into_iter()
            .find(|r| *r == text)
            .map(Refused)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown ack refusal {text:?}")))
    }
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
    pub refused: Option<Refused>,
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
