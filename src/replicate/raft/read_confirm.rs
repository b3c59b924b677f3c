//! Leadership confirmed for reads, in batches. An answer that writes
//! nothing (a KV get, a refused conditional write, a duplicate push, a pop
//! that finds nothing) is read from the leader's state; a leader cut off
//! from its majority still holds that state, and the majority may have
//! moved on without it. So such an answer is given only once this node has
//! confirmed, with a quorum, that it still led in the term it planned in at
//! a point after the read (openraft's read index: a heartbeat round sent
//! after the request, acknowledged by a majority). The read gate of
//! `StateView::gate` and a follower's read index ask here too: one
//! mechanism for every linearizable read.
//!
//! One round serves every read waiting when it starts; reads that arrive
//! during a round wait for the next one (the round in flight may have sent
//! its heartbeats before they were read), so under load a read costs about
//! one heartbeat round trip per batch, not one per call.

use super::types::Queen;
use crate::planner::command::Answer;
use crate::replicate::batch::Reply;
use crate::replicate::ProposeError;
use openraft::error::{LinearizableReadError, RaftError};
use openraft::raft::ReadPolicy;
use openraft::storage::RaftStateMachine;
use openraft::Raft;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// What a round confirmed: this node led in `term`, and a read that waits
/// until the qlog index `index` is applied sees every write committed
/// before the round started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Confirmed {
    pub term: u64,
    pub leader: u64,
    pub index: u64,
}

type Waiter = oneshot::Sender<Result<Confirmed, ProposeError>>;

pub struct ReadConfirmer<SM: RaftStateMachine<Queen>> {
    raft: Raft<Queen, SM>,
    /// Where rounds run: raft's runtime, not the front ends'.
    handle: tokio::runtime::Handle,
    rounds: Mutex<Rounds>,
}

#[derive(Default)]
struct Rounds {
    /// A task is running rounds until nobody waits.
    driving: bool,
    waiting: Vec<Waiter>,
}

impl<SM: RaftStateMachine<Queen>> ReadConfirmer<SM> {
    pub fn new(raft: Raft<Queen, SM>, handle: tokio::runtime::Handle) -> Arc<Self> {
        Arc::new(Self { raft, handle, rounds: Mutex::default() })
    }

    /// Confirms this node's leadership at a point after the call: the next
    /// round that starts after it. `NotLeader` when this node knows it does
    /// not lead, `Timeout` when a quorum did not answer in time (openraft
    /// gives a pending read its leader lease, one election timeout).
    pub async fn confirm(self: &Arc<Self>) -> Result<Confirmed, ProposeError> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut rounds = self.rounds.lock().expect("read rounds lock");
            rounds.waiting.push(tx);
            !std::mem::replace(&mut rounds.driving, true)
        };
        if start {
            self.handle.spawn(self.clone().drive());
        }
        rx.await.unwrap_or(Err(ProposeError::ShuttingDown))
    }

    /// Answers `answers`, planned in `term` without an entry, once a round
    /// confirms that this node still led in that term; otherwise their
    /// outcome is not known to the client (`Timeout`), never a value read
    /// from a state the majority may have left behind.
    pub async fn answer(self: &Arc<Self>, me: u64, term: u64, answers: Vec<(Answer, Reply)>) {
        if answers.is_empty() {
            return;
        }
        let led = match self.confirm().await {
            Ok(c) if c.term == term && c.leader == me => true,
            Ok(c) => {
                tracing::info!(planned = term, confirmed = c.term, "answers planned in an earlier term are not given");
                false
            }
            Err(_) => false,
        };
        for (answer, reply) in answers {
            let _ = reply.send(if led { Ok(answer) } else { Err(ProposeError::Timeout) });
        }
    }

    /// Runs rounds while reads wait, each for everyone waiting as it starts.
    async fn drive(self: Arc<Self>) {
        loop {
            let batch = {
                let mut rounds = self.rounds.lock().expect("read rounds lock");
                if rounds.waiting.is_empty() {
                    rounds.driving = false;
                    return;
                }
                std::mem::take(&mut rounds.waiting)
            };
            let outcome = self.round().await;
            for waiter in batch {
                let _ = waiter.send(outcome.clone());
            }
        }
    }

    async fn round(&self) -> Result<Confirmed, ProposeError> {
        match self.raft.get_read_linearizer(ReadPolicy::ReadIndex).await {
            Ok(linearizer) => {
                let read = linearizer.read_log_id();
                let leader = read.committed_leader_id();
                // Raft index i is qlog index i + 1 (`types.rs`).
                Ok(Confirmed { term: leader.term, leader: leader.node_id, index: read.index() + 1 })
            }
            Err(RaftError::APIError(LinearizableReadError::ForwardToLeader(f))) => {
                Err(ProposeError::NotLeader { leader: f.leader_id })
            }
            Err(RaftError::APIError(_)) => Err(ProposeError::Timeout),
            Err(RaftError::Fatal(_)) => Err(ProposeError::ShuttingDown),
        }
    }
}
