//! The replicator: how an entry becomes durable before it is applied. One
//! trait, so the front ends never know whether one node or a raft cluster
//! stands behind it; `local` group-commits on a single node.

pub mod local;

use crate::planner::command::{Answer, Command};
use std::future::Future;
use std::pin::Pin;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProposeError {
    #[error("the node is shutting down and takes no new writes")]
    ShuttingDown,
}

pub type Proposal<'a> = Pin<Box<dyn Future<Output = Result<Answer, ProposeError>> + Send + 'a>>;

pub trait Replicator: Send + Sync + 'static {
    /// Plans `command`, makes its entry durable, applies it, and answers.
    fn propose(&self, command: Command) -> Proposal<'_>;

    /// Finishes what is in flight, writes a final checkpoint and stops.
    fn stop(&self);
}
