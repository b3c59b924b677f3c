//! Commands: what a front end asks of the planner, and what it answers.

use crate::message::Message;
use crate::qlog::message_record::StoredPayload;

#[derive(Debug, Clone)]
pub enum Command {
    /// Appends messages, possibly to many queues and partitions, atomically.
    Push(Vec<PushItem>),
}

#[derive(Debug, Clone)]
pub struct PushItem {
    pub queue: String,
    pub partition: String,
    pub transaction_id: String,
    /// The encoded message, compressed as the qlog will store it.
    pub payload: StoredPayload,
}

impl PushItem {
    /// Encodes and compresses `message` (at `zstd_level`) on the caller's
    /// thread, so the sequencer only copies bytes.
    pub fn new(queue: String, partition: String, message: &Message, zstd_level: i32) -> Self {
        let payload = StoredPayload::prepare(message.encode(), zstd_level);
        Self { queue, partition, transaction_id: message.transaction_id.clone(), payload }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushStatus {
    Queued,
    /// The transactionId was pushed before: `offset` is the original one.
    Duplicate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOutcome {
    pub queue_id: u64,
    pub partition_id: u64,
    pub offset: u64,
    pub status: PushStatus,
}

#[derive(Debug, Clone)]
pub enum Answer {
    Pushed(Vec<PushOutcome>),
}
