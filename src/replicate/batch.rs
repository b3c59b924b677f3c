//! One group commit on its way through the pipeline: staged by the log
//! store, made durable by its syncer, then handed on (on one node to the
//! applier; under raft to openraft, which decides when it is committed).

use crate::planner::command::Answer;
use crate::planner::effect::Entry;
use crate::planner::Planned;
use crate::qlog::files::Location;
use crate::qlog::pending_sync::PendingSync;
use crate::replicate::ProposeError;
use std::time::Instant;
use tokio::sync::oneshot;

/// Where a command's answer goes once its batch is applied.
pub type Reply = oneshot::Sender<Result<Answer, ProposeError>>;

/// What rides through the log store with the entries it appends: on one
/// node a planned command and its reply, under raft an append's callback.
pub trait Ticket: Send + 'static {
    /// The entries to stage, in log order.
    fn entries(&self) -> &[Entry];
}

/// What rides with each entry through the single node's pipeline: the
/// planned command, and where its answer goes.
pub type LocalTicket = (Planned, Reply);

impl Ticket for LocalTicket {
    fn entries(&self) -> &[Entry] {
        self.0.entry.as_slice()
    }
}

pub struct Batch<T> {
    pub started: Instant,
    pub items: Vec<T>,
    /// Per entry staged, in order: where its message records sit.
    pub locations: Vec<Vec<Location>>,
    pub pending: PendingSync,
    /// The qlog bytes the batch wrote.
    pub bytes: u64,
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Batch {
            started: Instant::now(),
            items: Vec::new(),
            locations: Vec::new(),
            pending: PendingSync::default(),
            bytes: 0,
        }
    }
}
