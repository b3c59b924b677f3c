//! The rows of each keyspace.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `membership`: the one row, "current": the cluster configuration the last
/// membership entry applied set, and that entry's id and leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipRow {
    pub log_id: crate::log_id::LogId,
    pub leader: u64,
    pub membership: Membership,
}

/// A raft membership as openraft keeps it: one voter set, or two while a
/// change is joint, and every member's addresses (a member in no voter set
/// is a learner).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    pub configs: Vec<Vec<u64>>,
    pub members: Vec<(u64, Member)>,
}

/// Where a member of the cluster is reached.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Member {
    /// The raft port's address (`QUEEN_RAFT_ADDR`).
    pub raft: String,
    /// The HTTP API's address.
    pub http: String,
    /// The Kafka listener's advertised address (`QUEEN_KAFKA_ADVERTISED`).
    pub kafka: String,
}

/// `queues`: queue name → its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRow {
    pub id: u64,
    pub created_us: i64,
    pub namespace: Option<String>,
    pub task: Option<String>,
    /// The queue's options as configured, a JSON object in camelCase.
    pub options: String,
}

/// `partitions`: (queue id, partition id) → its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRow {
    pub name: String,
    /// The offset the next append gets: the high watermark.
    pub next_offset: u64,
    /// The oldest offset whose payload is still stored (retention moves it).
    pub log_start: u64,
    /// The oldest offset whose transactionId hash is still kept, at or below
    /// `log_start`: dedup outlives the payload. Records wholly below it are
    /// dead, and reclaim may free their files.
    pub txns_start: u64,
    pub created_us: i64,
    pub last_write_us: i64,
}

/// `dedup`: (queue id, partition id, offset) → the transactionId hash of the
/// message stored there (see `store/dedup.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DedupRow {
    pub hash: [u8; 16],
}

/// `producers`: (queue id, partition id, producer id) → what an idempotent
/// Kafka producer last wrote there, as Kafka's `ProducerStateManager` keeps
/// it: its epoch and its last batches (at most `ProducerRow::KEPT`), so a
/// retry of one of them answers its offset and a batch out of sequence or
/// from an older epoch is refused. One row per producer and partition, not
/// one per record: a Kafka record has no dedup row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerRow {
    pub epoch: i16,
    /// The producer's last batches in this epoch, oldest first.
    pub batches: Vec<ProducerBatch>,
    /// When it last wrote here: a producer silent for
    /// `QUEEN_KAFKA_PRODUCER_ID_EXPIRATION_MS` is forgotten.
    pub last_write_us: i64,
}

/// The producer id of a partition's marker row in `producers`: present once
/// the partition forgot a producer (`ForgetProducers`), so a batch of a
/// producer it does not know may be one it forgot, let through at any
/// sequence as Kafka lets it through.
pub const FORGOTTEN: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerBatch {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: u64,
}

impl ProducerRow {
    /// The batches kept per producer and partition: Kafka's, matching the
    /// five requests a producer may have in flight.
    pub const KEPT: usize = 5;

    /// Records a batch written at `at_us`: a newer epoch starts over.
    pub fn record(&mut self, epoch: i16, batch: ProducerBatch, at_us: i64) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.batches.clear();
        }
        if self.batches.len() == Self::KEPT {
            self.batches.remove(0);
        }
        self.batches.push(batch);
        self.last_write_us = at_us;
    }

    /// The last sequence written in the current epoch.
    pub fn last_seq(&self) -> Option<i32> {
        self.batches.last().map(|b| b.last_seq)
    }
}

/// `cursors`: (queue id, partition id, consumer group) → where the group is
/// in the partition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorRow {
    /// Every offset below this one is done: acknowledged or dead-lettered.
    pub committed: u64,
    /// Offsets at or above `committed` that are already done.
    pub done_above: BTreeSet<u64>,
    /// Failed deliveries so far, per offset not yet done.
    pub failures: BTreeMap<u64, u32>,
    /// The group's lease on the partition, if one was granted.
    pub lease: Option<LeaseRow>,
    /// No delivery before this time (the retry delay after a failure).
    pub not_before_us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRow {
    pub id: String,
    pub expires_us: i64,
    /// The offsets the lease covers, inclusive; done ones within are skipped.
    pub first: u64,
    pub last: u64,
}

/// `shares`: (queue id, partition id, consumer group) → the records of the
/// partition that members of a share group hold one by one (KIP-932's
/// acquisition locks, HTTP pops of a share group). The group's cursor keeps
/// the rest: what is done, and each record's failed deliveries. A keyspace
/// of its own, so that a checkpoint written before it existed loads
/// unchanged; it goes with its cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareRow {
    /// Offset → who holds the record, until when.
    pub held: BTreeMap<u64, Hold>,
    /// Offset → no delivery before this time (a failure's retry delay).
    pub retry_at: BTreeMap<u64, i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// A Kafka share member's id, or an HTTP pop's lease id.
    pub holder: String,
    pub expires_us: i64,
}

/// `groups`: (queue id, consumer group) → its subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRow {
    /// The group starts each partition at its first message at or after
    /// this time (0: from the beginning).
    pub from_us: i64,
    pub created_us: i64,
    /// Last-value delivery: a pop delivers a partition's newest message and
    /// retires everything behind it. Fixed when the group first registers.
    pub conflate: bool,
}

/// `kv`: "namespace\0key" → a live or expired value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvRow {
    /// The value's JSON text.
    pub value: String,
    /// Unique across the store, never reissued; 0 means "no row".
    pub version: u64,
    pub expires_us: Option<i64>,
    pub updated_us: i64,
}

impl KvRow {
    pub fn live(&self, now_us: i64) -> bool {
        self.expires_us.is_none_or(|e| e > now_us)
    }
}

/// `timers`: "queue\0timerKey" → a pending timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerRow {
    pub partition: String,
    /// Not before this time.
    pub deliver_at_us: i64,
    /// The transactionId the fired message carries (its dedup key).
    pub txn: String,
    pub message_id: String,
    /// The payload's bytes, as the fired message's value.
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    /// The payload is sealed for an encrypted queue.
    pub sealed: bool,
    pub created_us: i64,
    pub updated_us: i64,
}

/// `dlq`: (queue id, partition id, consumer group, offset) → why the message
/// was dead-lettered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DlqRow {
    pub error: Option<String>,
    pub failures: u32,
    pub moved_us: i64,
}

/// `kafka_txns`: a Kafka transactional id → its coordinator's state: the
/// producer it names, and the transaction that producer has open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KafkaTxnRow {
    pub producer_id: i64,
    /// Bumped by every InitProducerId and by every abort the coordinator
    /// decides alone (a timeout): a producer with a lower one is fenced.
    pub epoch: i16,
    /// The producer's `transaction.timeout.ms`.
    pub timeout_ms: i32,
    pub state: KafkaTxnState,
    /// When the open transaction began (its first partition or group added).
    pub started_us: i64,
    pub updated_us: i64,
    /// The open transaction's partitions (queue id, partition id), each
    /// with the stretches (first offset, count) it wrote there, in order:
    /// the partition's last stable offset holds at the first of them.
    pub partitions: BTreeMap<(u64, u64), Vec<(u64, u32)>>,
    /// The consumer groups whose offsets the transaction commits.
    pub groups: BTreeSet<String>,
    /// Offsets committed within the transaction: the groups' cursors move
    /// to them when it commits, and they are dropped when it aborts.
    pub offsets: Vec<TxnOffset>,
}

/// An offset a transaction commits for a group: the group's cursor on
/// (queue id, partition id) goes to `offset` at the commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnOffset {
    pub queue: u64,
    pub partition: u64,
    pub group: String,
    pub offset: u64,
    pub metadata: String,
}

/// Kafka's transaction states. The prepare states of Kafka's coordinator
/// never last: a transaction's end, markers and offsets included, is one
/// entry, so it goes from Ongoing to Complete at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KafkaTxnState {
    Empty,
    Ongoing,
    CompleteCommit,
    CompleteAbort,
}

impl KafkaTxnState {
    /// As DescribeTransactions and ListTransactions name it.
    pub fn name(self) -> &'static str {
        match self {
            KafkaTxnState::Empty => "Empty",
            KafkaTxnState::Ongoing => "Ongoing",
            KafkaTxnState::CompleteCommit => "CompleteCommit",
            KafkaTxnState::CompleteAbort => "CompleteAbort",
        }
    }
}

/// `aborted_txns`: (queue id, partition id, first offset) → an aborted
/// Kafka transaction's stretch of the partition: a read_committed fetch
/// names it, and its consumer skips that producer's records in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortedTxnRow {
    pub producer_id: i64,
    /// The offset of the abort marker.
    pub last_offset: u64,
}
