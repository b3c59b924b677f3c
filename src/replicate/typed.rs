//! Proposals typed by their answer. Every command goes through the pipeline
//! as a `Command` and comes back as an `Answer`, one enum for all, because a
//! group commit carries many kinds at once. A front end should not match
//! that enum: each constructor here pairs a command with the one answer the
//! planner gives its kind (`Planner::plan` answers each kind with its own
//! variant), and `ask` hands back that answer's type. A variant that does
//! not fit is a broken invariant of the planner, named as such, not a case
//! for each caller to handle.

use super::{ProposeError, Replicator};
use crate::planner::command::{
    AckItem, AckOutcome, Answer, Claim, Command, ConfigureQueue, PopRequest, PushItem, PushOutcome,
};
use crate::planner::kafka_txn::{KafkaTxnAnswer, KafkaTxnOp};
use crate::planner::kv::{KvAnswer, KvOp};
use crate::planner::locks::{LockOp, LockResult};
use crate::planner::push::QueueFull;
use crate::planner::share::{ShareAnswer, ShareOp};
use crate::planner::streams::{StreamsAnswer, StreamsOp};
use crate::planner::timers::{TimerOp, TimerResult};
use crate::planner::transaction::{Bundle, BundleAnswer};

/// A command and how its answer is read.
pub struct Typed<A> {
    command: Command,
    answer: fn(Answer) -> Result<A, Answer>,
}

impl Typed<Result<Vec<PushOutcome>, QueueFull>> {
    /// A push: its outcomes, or a refusal whole when a queue is full.
    pub fn push(items: Vec<PushItem>) -> Self {
        Typed {
            command: Command::Push(items),
            answer: |a| match a {
                Answer::Pushed(outcomes) => Ok(Ok(outcomes)),
                Answer::QueueFull(full) => Ok(Err(full)),
                other => Err(other),
            },
        }
    }
}

impl Typed<Vec<Claim>> {
    pub fn pop(request: PopRequest) -> Self {
        Typed { command: Command::Pop(request), answer: |a| if let Answer::Popped(c) = a { Ok(c) } else { Err(a) } }
    }
}

impl Typed<Vec<AckOutcome>> {
    pub fn ack(items: Vec<AckItem>) -> Self {
        Typed { command: Command::Ack(items), answer: |a| if let Answer::Acked(o) = a { Ok(o) } else { Err(a) } }
    }
}

impl Typed<KvAnswer> {
    pub fn kv(ops: Vec<KvOp>) -> Self {
        Typed { command: Command::Kv(ops), answer: |a| if let Answer::Kv(k) = a { Ok(k) } else { Err(a) } }
    }
}

impl Typed<BundleAnswer> {
    pub fn transaction(bundle: Bundle) -> Self {
        Typed {
            command: Command::Transaction(bundle),
            answer: |a| if let Answer::Transaction(t) = a { Ok(t) } else { Err(a) },
        }
    }
}

impl Typed<StreamsAnswer> {
    pub fn streams(op: StreamsOp) -> Self {
        Typed {
            command: Command::Streams(Box::new(op)),
            answer: |a| if let Answer::Streams(s) = a { Ok(s) } else { Err(a) },
        }
    }
}

impl Typed<KafkaTxnAnswer> {
    pub fn kafka_txn(op: KafkaTxnOp) -> Self {
        Typed {
            command: Command::KafkaTxn(Box::new(op)),
            answer: |a| if let Answer::KafkaTxn(t) = a { Ok(t) } else { Err(a) },
        }
    }
}

impl Typed<ShareAnswer> {
    pub fn share(op: ShareOp) -> Self {
        Typed { command: Command::Share(op), answer: |a| if let Answer::Share(s) = a { Ok(s) } else { Err(a) } }
    }
}

impl Typed<Vec<LockResult>> {
    pub fn locks(ops: Vec<LockOp>) -> Self {
        Typed { command: Command::Locks(ops), answer: |a| if let Answer::Locks(r) = a { Ok(r) } else { Err(a) } }
    }
}

impl Typed<Vec<TimerResult>> {
    pub fn timers(ops: Vec<TimerOp>) -> Self {
        Typed { command: Command::Timers(ops), answer: |a| if let Answer::Timers(r) = a { Ok(r) } else { Err(a) } }
    }
}

impl Typed<serde_json::Value> {
    /// A queue's configuration: the options it holds after.
    pub fn configure(cmd: ConfigureQueue) -> Self {
        Typed {
            command: Command::Configure(cmd),
            answer: |a| if let Answer::Configured { options, .. } = a { Ok(options) } else { Err(a) },
        }
    }
}

impl Typed<bool> {
    /// A queue's deletion: whether it existed.
    pub fn delete_queue(queue: String) -> Self {
        Typed {
            command: Command::DeleteQueue { queue },
            answer: |a| if let Answer::Deleted { existed } = a { Ok(existed) } else { Err(a) },
        }
    }
}

/// A topic's creation or growth: whether the queue existed before, and
/// the partitions created.
pub struct PartitionsCreated {
    pub existed: bool,
    pub created: usize,
}

impl Typed<PartitionsCreated> {
    pub fn create_topic(queue: String, partitions: u32, options: serde_json::Map<String, serde_json::Value>) -> Self {
        Self::partitions(Command::CreateTopic { queue, partitions, options })
    }

    pub fn add_partitions(queue: String, total: u32) -> Self {
        Self::partitions(Command::AddPartitions { queue, total })
    }

    fn partitions(command: Command) -> Self {
        Typed {
            command,
            answer: |a| match a {
                Answer::PartitionsCreated { existed, created } => Ok(PartitionsCreated { existed, created }),
                other => Err(other),
            },
        }
    }
}

/// A lease extension's answer: the cursors renewed, and until when.
pub struct Extended {
    pub renewed: usize,
    pub expires_us: Option<i64>,
}

impl Typed<Extended> {
    pub fn extend_lease(lease_id: String) -> Self {
        Typed {
            command: Command::ExtendLease { lease_id },
            answer: |a| match a {
                Answer::Extended { renewed, expires_us } => Ok(Extended { renewed, expires_us }),
                other => Err(other),
            },
        }
    }
}

impl Typed<usize> {
    /// A group command (seek, delete, resubscribe, redeliver, offset
    /// commits): the partitions whose cursors it moved or removed.
    ///
    /// # Panics
    /// When `command` is not a group command: that is a caller's mistake.
    pub fn group(command: Command) -> Self {
        assert!(
            matches!(
                command,
                Command::SeekGroup { .. }
                    | Command::DeleteGroup { .. }
                    | Command::Resubscribe { .. }
                    | Command::Redeliver { .. }
                    | Command::CommitOffsets(_)
            ),
            "Typed::group takes a group command"
        );
        Typed { command, answer: |a| if let Answer::GroupChanged { partitions } = a { Ok(partitions) } else { Err(a) } }
    }
}

impl dyn Replicator {
    /// `ask` through `Replicator::propose_now`: the command is handed to the
    /// planner before this returns, or handed back where it cannot be.
    pub fn ask_now<A: 'static>(
        &self,
        proposal: Typed<A>,
    ) -> Result<impl std::future::Future<Output = Result<A, ProposeError>> + Send + 'static, Box<Typed<A>>> {
        let Typed { command, answer } = proposal;
        match self.propose_now(command) {
            Ok(wait) => Ok(async move { Ok(read_answer(answer, wait.await?)) }),
            Err(command) => Err(Box::new(Typed { command: *command, answer })),
        }
    }

    /// Proposes a typed command and answers its own answer.
    pub async fn ask<A>(&self, proposal: Typed<A>) -> Result<A, ProposeError> {
        let answer = self.propose(proposal.command).await?;
        Ok(read_answer(proposal.answer, answer))
    }
}

fn read_answer<A>(read: fn(Answer) -> Result<A, Answer>, answer: Answer) -> A {
    read(answer).unwrap_or_else(|other| {
        panic!("invariant broken: the planner answered {other:?} to a command whose answer kind is fixed")
    })
}
