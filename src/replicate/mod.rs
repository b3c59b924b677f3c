//! The replicator: how an entry becomes durable before it is applied. One
//! trait, so the front ends never know whether one node or a raft cluster
//! stands behind it; `local` group-commits on a single node.

pub mod local;
pub mod log_store;

use crate::planner::command::{Answer, Command};
use std::future::Future;
use std::pin::Pin;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProposeError {
    #[error("the node is shutting down and takes no new writes")]
    ShuttingDown,
    /// The writer cannot open a qlog file (the process is out of file
    /// descriptors, or the file system refuses): the command is refused
    /// before it is planned, and the others go on.
    #[error("the node cannot open its log files now (out of file descriptors?); retry")]
    LogFilesUnavailable,
}

pub type Proposal<'a> = Pin<Box<dyn Future<Output = Result<Answer, ProposeError>> + Send + 'a>>;

pub trait Replicator: Send + Sync + 'static {
    /// Plans `command`, makes its entry durable, applies it, and answers.
    fn propose(&self, command: Command) -> Proposal<'_>;

    /// Finishes what is in flight, writes a final checkpoint and stops.
    fn stop(&self);
}
