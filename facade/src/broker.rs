//! The narrow set of broker operations the facade needs. The `queen` crate
//! implements it with planner commands, so a Kafka request takes exactly the
//! path an HTTP request takes; the facade itself keeps no data.

use crate::topic_settings::TopicSettings;
use bytes::Bytes;
use protocol::records::{PlainRecord, ProducedBatch};
use protocol::ResponseError;
use std::future::Future;
use std::pin::Pin;

/// A topic as Kafka sees it: a queue and its partitions in creation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicView {
    pub name: String,
    /// Stable for the queue's life: Kafka's topic id.
    pub id: [u8; 16],
    pub partitions: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffsets {
    /// The oldest offset still stored.
    pub log_start: i64,
    /// The offset the next record gets.
    pub high_watermark: i64,
    /// The first offset of the oldest open transaction there, else the
    /// high watermark: a read_committed consumer reads below it.
    pub last_stable: i64,
}

/// One produced batch for one partition.
#[derive(Debug, Clone)]
pub struct PartitionBatch {
    pub topic: String,
    pub partition: i32,
    /// The request's batches for the partition merged: their records, and
    /// the producer fields of the first.
    pub batch: ProducedBatch,
    /// Each of those batches as it came, to be stored so.
    pub wires: Vec<Bytes>,
    /// The producer's authenticated identity (an OAUTHBEARER token's
    /// `sub`), stored with each record as HTTP stores `producerSub`.
    pub producer_sub: Option<String>,
    /// The produce request's transactional id: its batches belong to that
    /// id's open transaction.
    pub transactional_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Produced {
    pub base_offset: i64,
    pub log_start: i64,
    /// The append time a LogAppendTime topic stamped the batch with, in ms;
    /// -1 for CreateTime.
    pub log_append_time_ms: i64,
}

/// A produce's answers, one per batch, once its write is durable.
pub type ProduceAnswers = Pin<Box<dyn Future<Output = Vec<Result<Produced, BrokerError>>> + Send>>;

/// One partition a fetch reads.
#[derive(Debug, Clone)]
pub struct FetchAsk {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub max_bytes: usize,
    /// Only what transactions committed, below the last stable offset.
    pub read_committed: bool,
    /// Read no further than this offset (a share fetch reads what it
    /// acquired, however many bytes that is): `max_bytes` is then no limit.
    pub until: Option<i64>,
}

/// Per partition a share fetch asked for, the records acquired for the
/// member as (offset, delivery count), or why none could be.
pub type ShareAcquired = Vec<Result<Vec<(i64, i16)>, BrokerError>>;

/// A share group member's acknowledgement of offsets `first..=last` of a
/// partition: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (Kafka's types).
#[derive(Debug, Clone)]
pub struct ShareAckAsk {
    pub topic: String,
    pub partition: i32,
    pub first: i64,
    pub last: i64,
    pub kind: i8,
}

#[derive(Debug, Clone)]
pub struct Fetched {
    /// Ascending, gapless offsets: from the one asked for, or from the
    /// first of a stored batch holding it (a consumer skips the offsets
    /// below the one it asked for, as it does of Kafka's batches).
    pub runs: Vec<FetchedRun>,
    pub offsets: PartitionOffsets,
    /// For a read_committed fetch, the aborted transactions the records
    /// may hold: (producer id, first offset), by first offset.
    pub aborted: Vec<(i64, i64)>,
}

/// A stretch of a fetched partition.
#[derive(Debug, Clone)]
pub enum FetchedRun {
    /// Record batches stored as they were produced: answered as they are.
    Batches(Bytes),
    /// The same, left in the store's file: sent from there.
    InFile(crate::file_range::FileRange),
    /// Records stored one by one, with their offsets: encoded as a batch.
    Records(Vec<(i64, PlainRecord)>),
}

#[derive(Debug, Clone)]
pub struct OffsetCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// The commit's metadata string, kept with the offset (empty for none).
    pub metadata: String,
}

/// A group's committed position on a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The next offset the group consumes.
    pub offset: i64,
    /// The metadata string of the group's last commit there.
    pub metadata: String,
}

/// A transactional producer as a request names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnProducer {
    pub id: i64,
    pub epoch: i16,
}

/// A transactional id as DescribeTransactions and ListTransactions show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnView {
    pub transactional_id: String,
    pub producer: TxnProducer,
    /// Kafka's name for the state (`Ongoing`, `CompleteCommit`, ...).
    pub state: &'static str,
    pub timeout_ms: i32,
    /// When the open transaction began, in ms; -1 with none open.
    pub started_ms: i64,
    /// The open transaction's partitions.
    pub partitions: Vec<(String, i32)>,
}

/// One topic setting in Kafka's terms.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    pub name: String,
    pub value: String,
    /// False only for the settings that map onto a queue option.
    pub read_only: bool,
    /// Set on this topic rather than a default.
    pub is_set: bool,
}

/// Why a broker operation did not happen, named as the Kafka error a client
/// reacts to.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BrokerError {
    #[error("no such topic or partition")]
    UnknownTopicOrPartition,
    #[error("the topic already exists")]
    TopicAlreadyExists,
    #[error("invalid topic: {0}")]
    InvalidTopic(String),
    #[error("invalid partition count: {0}")]
    InvalidPartitions(String),
    #[error("offset {offset} is outside {log_start}..={high_watermark}")]
    OffsetOutOfRange { offset: i64, log_start: i64, high_watermark: i64 },
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("the records are invalid: {0}")]
    CorruptRecords(String),
    #[error("a record batch of {size} bytes is over the max.message.bytes of {limit}")]
    RecordTooLarge { size: usize, limit: usize },
    #[error("the volume is too full to take the write")]
    StorageFull,
    #[error("{0}")]
    QueueFull(String),
    #[error("the node is shutting down")]
    ShuttingDown,
    /// This broker does not lead the partition: the client refreshes its
    /// metadata and sends the request to the leader.
    #[error("{0}")]
    NotLeader(String),
    /// The write's outcome is not known: it may still commit.
    #[error("{0}")]
    TimedOut(String),
    /// A transient refusal: the broker cannot write now, and a retry may succeed.
    #[error("{0}")]
    Unavailable(String),
    #[error("the broker failed to read or write: {0}")]
    Internal(String),
    /// The producer's epoch is older than its transactional id's: another
    /// producer took the id, or its transaction timed out and was aborted.
    #[error("the producer was fenced: its transactional id has a newer epoch")]
    ProducerFenced,
    #[error("the producer id is not the one the transactional id has")]
    UnknownProducerId,
    /// An idempotent producer's batch whose preceding batch is not stored:
    /// the producer sends that one first.
    #[error("the batch's sequence does not follow the last one its producer wrote to the partition")]
    OutOfOrderSequence,
    #[error("{0}")]
    InvalidTxnState(String),
    /// The coordinator cannot serve yet (a cluster not yet reading
    /// transactions): the client asks the same coordinator again.
    #[error("{0}")]
    CoordinatorLoading(String),
    #[error("{0}")]
    InvalidRecordState(String),
    /// What this broker does not do in its present configuration.
    #[error("{0}")]
    Unsupported(String),
}

impl BrokerError {
    pub fn kafka(&self) -> ResponseError {
        match self {
            BrokerError::UnknownTopicOrPartition => ResponseError::UnknownTopicOrPartition,
            BrokerError::TopicAlreadyExists => ResponseError::TopicAlreadyExists,
            BrokerError::InvalidTopic(_) => ResponseError::InvalidTopicException,
            BrokerError::InvalidPartitions(_) => ResponseError::InvalidPartitions,
            BrokerError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
            BrokerError::InvalidRequest(_) => ResponseError::InvalidRequest,
            BrokerError::CorruptRecords(_) => ResponseError::CorruptMessage,
            BrokerError::RecordTooLarge { .. } => ResponseError::MessageTooLarge,
            BrokerError::StorageFull | BrokerError::QueueFull(_) | BrokerError::Unavailable(_) => {
                ResponseError::KafkaStorageError
            }
            BrokerError::ShuttingDown | BrokerError::NotLeader(_) => ResponseError::NotLeaderOrFollower,
            BrokerError::TimedOut(_) => ResponseError::RequestTimedOut,
            BrokerError::Internal(_) => ResponseError::UnknownServerError,
            BrokerError::ProducerFenced => ResponseError::ProducerFenced,
            BrokerError::OutOfOrderSequence => ResponseError::OutOfOrderSequenceNumber,
            BrokerError::UnknownProducerId => ResponseError::InvalidProducerIdMapping,
            BrokerError::InvalidTxnState(_) => ResponseError::InvalidTxnState,
            BrokerError::CoordinatorLoading(_) => ResponseError::CoordinatorLoadInProgress,
            BrokerError::InvalidRecordState(_) => ResponseError::InvalidRecordState,
            BrokerError::Unsupported(_) => ResponseError::UnsupportedVersion,
        }
    }

    pub fn code(&self) -> i16 {
        self.kafka().code()
    }

    /// The error as a partition's read answers it (Fetch): a read whose
    /// leadership could not be confirmed in time sends the client to learn
    /// the partition's leader again, as a leader change does; Kafka's
    /// consumers take REQUEST_TIMED_OUT on a fetched partition for a bug.
    pub fn read_error(&self) -> ResponseError {
        match self {
            BrokerError::TimedOut(_) => ResponseError::NotLeaderOrFollower,
            other => other.kafka(),
        }
    }

    /// The error as a group coordinator answers it (OffsetCommit): a write
    /// that a leader change cut short, or whose outcome is unknown, sends
    /// the member to find its coordinator again and retry, which every
    /// client does for these codes (the Java consumer of KIP-848 takes
    /// REQUEST_TIMED_OUT on a commit for a bug).
    pub fn coordinator_code(&self) -> i16 {
        match self {
            BrokerError::ShuttingDown | BrokerError::NotLeader(_) => ResponseError::NotCoordinator.code(),
            BrokerError::TimedOut(_) | BrokerError::Unavailable(_) => ResponseError::CoordinatorNotAvailable.code(),
            other => other.code(),
        }
    }
}

/// Where another broker listens for Kafka clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

/// What a read behind [`Broker::read_gate`] reads.
pub enum Read {
    /// These topics' partitions.
    Topics(Vec<String>),
    /// The group coordinator's state (consumer groups' generations and
    /// assignments).
    Coordinator,
    /// Anything: committed offsets of any topic, say.
    Everything,
}

/// Where a consumer group's coordinator is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupCoordinator {
    Here,
    There(BrokerAddress),
    /// Not known now (no leader): the client asks again.
    NotAvailable,
}

pub trait Broker: Send + Sync + 'static {
    /// Which broker coordinates consumer groups: this one, or another (a
    /// cluster's raft leader, so that every member of a group meets the
    /// same coordinator), or none for now (a cluster between leaders).
    fn group_coordinator(&self) -> GroupCoordinator {
        GroupCoordinator::Here
    }

    /// The cluster's other brokers, its voters by their Kafka addresses;
    /// none on a single node. Every node lists the same ones (`cluster_brokers.rs`).
    fn other_brokers(&self) -> Vec<BrokerAddress> {
        Vec::new()
    }

    /// Every topic, by name.
    fn topics(&self) -> Vec<TopicView>;

    fn topic(&self, name: &str) -> Option<TopicView>;

    /// The topic with Kafka topic id `id`.
    fn topic_by_id(&self, id: [u8; 16]) -> Option<TopicView>;

    /// Creates a topic of `partitions` partitions, with the settings given.
    fn create_topic(
        &self,
        name: String,
        partitions: u32,
        settings: TopicSettings,
    ) -> impl Future<Output = Result<TopicView, BrokerError>> + Send;

    fn delete_topic(&self, name: String) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// Grows a topic to `total` partitions.
    fn create_partitions(&self, name: String, total: u32) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// Why the broker would refuse a produce to `topic` whose largest batch
    /// takes `batch_bytes` as produced before writing anything (the volume
    /// is full, the batch is over the topic's `max.message.bytes`), if it
    /// would.
    fn admit(&self, topic: &str, batch_bytes: usize) -> Result<(), BrokerError>;

    /// Appends the batches, durably and as one write, and answers each
    /// batch's first offset. A retried idempotent batch answers the offset
    /// it got first. The outer future resolves once the write's place is
    /// fixed: a write asked for after that is written after it, so a
    /// connection reads its next request while this one is made durable.
    fn produce(&self, batches: Vec<PartitionBatch>) -> impl Future<Output = ProduceAnswers> + Send;

    /// Reads the partitions of one pass of a fetch, in the order asked and
    /// in one go: each from its offset, at least one record if there is
    /// one, until its own `max_bytes` or what is left of `total_bytes`
    /// after those before it; at the high watermark or with no budget, none
    /// and no read. One answer for each ask, in order.
    fn fetch(
        &self,
        asks: Vec<FetchAsk>,
        total_bytes: usize,
    ) -> impl Future<Output = Vec<Result<Fetched, BrokerError>>> + Send;

    /// Resolves once what this broker reads holds every write committed
    /// before the call (a cluster's read index: a follower or a leader cut
    /// off from its majority may lag), or answers why it cannot. The
    /// offsets and commits a client acts on are read after it. `Read` says
    /// of what: a broker whose topics lie in several logs waits only for
    /// theirs.
    fn read_gate(&self, of: Read) -> impl Future<Output = Result<(), BrokerError>> + Send;

    fn offsets(&self, topic: &str, partition: i32) -> Result<PartitionOffsets, BrokerError>;

    /// The first record whose timestamp is at or after `timestamp_ms`
    /// (Kafka's time index lookup): (offset, its timestamp).
    fn offset_for_time(
        &self,
        topic: String,
        partition: i32,
        timestamp_ms: i64,
    ) -> impl Future<Output = Result<Option<(i64, i64)>, BrokerError>> + Send;

    /// The first record holding the largest timestamp: (offset, timestamp), if any.
    fn max_timestamp(
        &self,
        topic: String,
        partition: i32,
    ) -> impl Future<Output = Result<Option<(i64, i64)>, BrokerError>> + Send;

    /// Resolves at the next applied append to one of `topics`. Created
    /// before a check, it catches any append that lands after the check.
    fn appended(&self, topics: &[&str]) -> impl Future<Output = ()> + Send + 'static;

    /// Moves the group's cursors to the committed offsets and keeps each
    /// commit's metadata, durably.
    fn commit_offsets(
        &self,
        group: String,
        commits: Vec<OffsetCommit>,
    ) -> impl Future<Output = Vec<Result<(), BrokerError>>> + Send;

    /// The group's cursor on a partition and its last commit's metadata.
    fn committed(&self, group: &str, topic: &str, partition: i32) -> Result<Option<Committed>, BrokerError>;

    /// Every (topic, partition) the group holds a cursor on.
    fn group_partitions(&self, group: &str) -> Vec<(String, i32)>;

    /// Every group that holds a cursor.
    fn group_names(&self) -> Vec<String>;

    /// Forgets the group's cursors on `topic`, or on every topic.
    fn delete_group_offsets(
        &self,
        group: String,
        topic: Option<String>,
    ) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// The saved state of consumer-protocol group `group` (KIP-848), as
    /// the coordinator last saved it; read behind the read gate.
    fn consumer_group_state(&self, group: &str) -> Option<String>;

    /// Saves consumer-protocol group `group`'s state; answers once it is
    /// durable (on a cluster, committed), so a new coordinator loads it.
    fn save_consumer_group_state(
        &self,
        group: String,
        state: String,
    ) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// A producer id no producer has had before, durably.
    fn new_producer_id(&self) -> impl Future<Output = Result<i64, BrokerError>> + Send;

    /// InitProducerId with a transactional id: the id's producer with its
    /// epoch bumped (or a new producer for a new id), whatever the previous
    /// one left open aborted. `producer`: the one the client names.
    fn init_transactional(
        &self,
        transactional_id: String,
        timeout_ms: i32,
        producer: Option<TxnProducer>,
    ) -> impl Future<Output = Result<TxnProducer, BrokerError>> + Send;

    /// AddPartitionsToTxn: one answer per partition, in order.
    fn add_partitions_to_txn(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        partitions: Vec<(String, i32)>,
    ) -> impl Future<Output = Vec<Result<(), BrokerError>>> + Send;

    /// AddOffsetsToTxn.
    fn add_offsets_to_txn(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        group: String,
    ) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// TxnOffsetCommit: offsets the group commits if the transaction does.
    fn txn_offset_commit(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        group: String,
        commits: Vec<OffsetCommit>,
    ) -> impl Future<Output = Vec<Result<(), BrokerError>>> + Send;

    /// EndTxn: commits or aborts the open transaction.
    fn end_txn(
        &self,
        transactional_id: String,
        producer: TxnProducer,
        commit: bool,
    ) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// Every transactional id the coordinator knows, in id order.
    fn transactions(&self) -> Vec<TxnView>;

    /// Whether an open transaction holds offsets for the group on the
    /// partition, not yet committed (OffsetFetch's `require_stable`).
    fn txn_offsets_pending(&self, group: &str, topic: &str, partition: i32) -> bool;

    /// The topic's configuration as Kafka names it.
    fn topic_config(&self, topic: &str) -> Option<Vec<ConfigEntry>>;

    /// Sets the topic's settings that are given (those Kafka settings that
    /// map onto queue options), leaving the rest as they are.
    fn set_topic_settings(
        &self,
        topic: String,
        settings: TopicSettings,
    ) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// A share group's configs as Kafka names them; `None` when `group` is
    /// not a share group.
    fn share_group_config(&self, group: &str) -> Option<Vec<ConfigEntry>>;

    /// Sets (`Some`) or resets (`None`) share group configs of `group`,
    /// making it a share group if it was not; every value is checked before
    /// any is set (`InvalidRequest` names the one refused).
    fn set_share_group_config(
        &self,
        group: String,
        settings: Vec<(String, Option<String>)>,
        validate_only: bool,
    ) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// Makes `group` a share group, if it is not one already.
    fn declare_share_group(&self, group: String) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// Every share group's id.
    fn share_groups(&self) -> Vec<String>;

    /// `group` is no longer a share group: its configs go (its cursors are
    /// `delete_group_offsets`'s).
    fn forget_share_group(&self, group: String) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// Up to `max_records` available records of the partitions, acquired
    /// for `member` of share group `group`: per asked partition, its
    /// records as (offset, delivery count).
    fn share_acquire(
        &self,
        group: String,
        member: String,
        partitions: Vec<(String, i32)>,
        max_records: usize,
    ) -> impl Future<Output = Result<ShareAcquired, BrokerError>> + Send;

    /// `member`'s acknowledgements, one answer each, in order.
    fn share_acknowledge(
        &self,
        group: String,
        member: String,
        acks: Vec<ShareAckAsk>,
    ) -> impl Future<Output = Result<Vec<Result<(), BrokerError>>, BrokerError>> + Send;

    /// Gives back every record `member` holds in `group`.
    fn share_release(&self, group: String, member: String) -> impl Future<Output = Result<(), BrokerError>> + Send;

    /// The share-partition start offset of `group` on a partition: the
    /// first record not yet done; `None` before the group read it.
    fn share_start_offset(&self, group: &str, topic: &str, partition: i32) -> Result<Option<i64>, BrokerError>;
}
