//! Commands: what a front end asks of the planner, and what it answers.

// The items commands carry and the outcomes answers hold live in a leaf
// below every planner module (`items.rs`); they are named here too, where
// front ends look for them beside the commands.
pub use super::items::*;

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
    /// A share group's acquisitions, acknowledgements and releases
    /// (`planner/share.rs`). After `KafkaTxn`, for the same reason.
    Share(super::share::ShareOp),
    /// Forgets the idempotent Kafka producers silent in a partition for
    /// `expiry_us` (`planner/producers.rs`). After `Share`, for the same
    /// reason.
    ExpireProducers {
        expiry_us: i64,
    },
    /// Drops the dedup rows past their window on the partitions (queue id,
    /// partition id) the scanner found due (`planner/retention.rs`). After
    /// `ExpireProducers`, for the same reason.
    ExpireDedup {
        partitions: Vec<(u64, u64)>,
        txn_window_min_s: u64,
    },
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
    Share(super::share::ShareAnswer),
}
