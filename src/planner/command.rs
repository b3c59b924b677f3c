//! Commands: what a front end asks of the planner, and what it answers.

use crate::message::Message;

#[derive(Debug, Clone)]
pub enum Command {
    /// Appends messages, possibly to many queues and partitions, atomically.
    Push(Vec<PushItem>),
}

#[derive(Debug, Clone)]
pub struct PushItem {
    pub queue: String,
    pub partition: String,
    pub message: Message,
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
