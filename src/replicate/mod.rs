//! The replicator: how an entry becomes durable, and committed, before it is
//! applied. One trait, so the front ends never know whether one node or a
//! raft cluster stands behind it. Three parts, each of which a raft adapter
//! wraps: the proposer (`proposer/`: plans on the leader), the log store
//! (`log_store/`: appends durably, cuts, reads by index, keeps the vote) and
//! the state machine (`state_machine/`: applies, checkpoints, snapshots).
//! `local` composes them on a single node, where durable is committed.

pub(crate) mod batch;
pub(crate) mod local;
pub mod log_store;
pub(crate) mod proposer;
pub mod raft;
pub(crate) mod stage;
pub mod state_machine;
pub mod typed;

use crate::planner::command::{Answer, Command};
use raft::membership::{ChangeRefusal, MembershipChange, MembershipView};
use std::future::Future;
use std::pin::Pin;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ProposeError {
    #[error("the node is shutting down and takes no new writes")]
    ShuttingDown,
    /// The writer cannot open a qlog file (the process is out of file
    /// descriptors, or the file system refuses): the command is refused
    /// before it is planned, and the others go on.
    #[error("the node cannot open its log files now (out of file descriptors?); retry")]
    LogFilesUnavailable,
    /// This node does not lead: only a leader plans. `leader` is the node
    /// that does, when this one knows it.
    #[error("this node is not the leader{}; send the write to the leader", match .leader { Some(id) => format!(" (node {id} is)"), None => " and knows of no leader".to_string() })]
    NotLeader { leader: Option<u64> },
    /// The entry was proposed and its outcome is not known: it may still
    /// commit (guarantees.md's 503). A retry with the same ids is safe.
    #[error("the write was not committed in time; its outcome is not known, and a retry with the same ids is safe")]
    Timeout,
    /// This node is no member of the cluster: removed from its membership,
    /// or waiting to be added (QUEEN_RAFT_JOIN). No leader answers it, so it
    /// refuses at once rather than at the call's timeout.
    #[error("this node is not a member of the cluster (removed from its membership, or waiting to be added with QUEEN_RAFT_JOIN): send the request to a member")]
    NotAMember,
}

pub type Proposal<'a> = Pin<Box<dyn Future<Output = Result<Answer, ProposeError>> + Send + 'a>>;
/// The read gate's wait (`Replicator::read_gate`).
pub type ReadGate<'a> = Pin<Box<dyn Future<Output = Result<(), ProposeError>> + Send + 'a>>;

pub trait Replicator: Send + Sync + 'static {
    /// Plans `command`, makes its entry durable, applies it, and answers.
    fn propose(&self, command: Command) -> Proposal<'_>;

    /// Hands `command` to the planner before it returns, where this node
    /// plans (one node, or the raft leader), and answers the wait for its
    /// answer; hands the command back where it would go to another node.
    /// Commands proposed this way one after another are planned in that
    /// order, so a front end may send the next before the first is answered
    /// (a Kafka connection's pipelined produce requests).
    fn propose_now(&self, command: Command) -> Result<Proposal<'static>, Box<Command>> {
        Err(Box::new(command))
    }

    /// Resolves once this node's applied state holds every write committed
    /// before the call (`state_view.rs`), or answers why it cannot.
    fn read_gate(&self) -> ReadGate<'_>;

    /// Finishes what is in flight, writes a final checkpoint and stops.
    fn stop(&self);

    /// The raft block of `/health`; none on a single node.
    fn raft_status(&self) -> Option<RaftStatus> {
        None
    }

    /// The leader this node knows of and where it is reached, once this
    /// node knows one; none on a single node.
    fn leader(&self) -> Option<(u64, crate::store::rows::Member)> {
        None
    }

    /// The cluster's voters and where each is reached, as this node's
    /// membership names them (the founders' list before it knows one);
    /// none on a single node.
    fn voters(&self) -> Vec<(u64, crate::store::rows::Member)> {
        Vec::new()
    }

    /// The cluster's membership as this node sees it (the leader's view
    /// when it can reach the leader); none on a single node.
    fn membership(&self) -> Option<Admin<'_, MembershipView>> {
        None
    }

    /// Makes a membership change through the leader; none on a single node.
    fn change_membership(&self, _change: MembershipChange) -> Option<Admin<'_, Result<MembershipView, ChangeRefusal>>> {
        None
    }
}

/// An administrative call's answer.
pub type Admin<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A cluster node's view of raft, as `/health` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RaftStatus {
    pub node: u64,
    /// `leader`, `follower`, `candidate` or `learner`; `stopped` once
    /// apply refused an entry.
    pub role: &'static str,
    pub term: u64,
    pub leader: Option<u64>,
    /// The last qlog index this node applied, and the last it knows committed.
    pub applied: u64,
    pub commit: u64,
    /// The last qlog index purged from the log (`QUEEN_RAFT_PURGE_HOLD_S`).
    pub purged: u64,
    /// The effect catalogue versions of the cluster version gate.
    pub catalogue: raft::version_gate::Versions,
    pub voters: Vec<u64>,
    /// Started on an empty directory with QUEEN_RAFT_JOIN and not added to
    /// the membership yet: it serves nothing until it is (recovery.md).
    pub joining: bool,
    /// Removed from the membership while it ran, as a member told it, or
    /// as its own log says: it serves nothing until it is added again.
    pub removed: bool,
    /// An entry apply refused, and the entries applied as no-ops.
    pub apply: raft::apply_guard::ApplyReport,
}
