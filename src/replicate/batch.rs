//! One group commit on its way through the pipeline: planned by the
//! proposer, made durable by the log store, applied by the state machine.

use crate::planner::command::Answer;
use crate::planner::Planned;
use crate::qlog::files::Location;
use crate::qlog::pending_sync::PendingSync;
use crate::replicate::ProposeError;
use std::time::Instant;
use tokio::sync::oneshot;

/// Where a command's answer goes once its batch is applied.
pub type Reply = oneshot::Sender<Result<Answer, ProposeError>>;

pub struct Batch {
    pub started: Instant,
    pub planned: Vec<(Planned, Reply)>,
    /// Per planned entry, in order: where its message records sit.
    pub locations: Vec<Vec<Location>>,
    pub pending: PendingSync,
    /// The qlog bytes the batch wrote.
    pub bytes: u64,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            started: Instant::now(),
            planned: Vec::new(),
            locations: Vec::new(),
            pending: PendingSync::default(),
            bytes: 0,
        }
    }
}
