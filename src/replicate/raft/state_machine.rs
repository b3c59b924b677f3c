//! openraft's state machine over the store: apply runs each committed entry
//! through the planner's `apply` (idempotent by index, clock-free), with the
//! locations of its message records from the log, and answers the leader's
//! waiting client whether it applied or was voided.
//!
//! Snapshots are not served over raft yet: a build or an install answers
//! `Unsupported`, and the cluster's openraft config never asks for one
//! (`SnapshotPolicy::Never`) until `snapshot.rs`'s build and staged install
//! are wired in here.

use super::apply_guard::ApplyGuard;
use super::log_storage::RaftLog;
use super::types::{raft_membership, to_qlog_entry, to_raft, Applied, Queen, RaftLogId};
use crate::apply_watch::ApplyWatch;
use crate::log_id::LogId;
use crate::store::checkpointer::Checkpointer;
use crate::store::{Store, MEMBERSHIP_ROW};
use futures_util::StreamExt;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::OptionalSend;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

type Snapshot = openraft::type_config::alias::SnapshotOf<Queen, PathBuf>;
type SnapshotMeta = openraft::type_config::alias::SnapshotMetaOf<Queen>;
type Membership = openraft::type_config::alias::StoredMembershipOf<Queen>;

pub struct RaftMachine {
    pub store: Arc<RwLock<Store>>,
    pub log: RaftLog,
    /// Wakes readers after every apply.
    pub apply_watch: Arc<ApplyWatch>,
    /// Applies, skips what QUEEN_RAFT_APPLY_SKIP names, and stops at an
    /// entry apply refuses.
    pub guard: Arc<ApplyGuard>,
    /// Checkpoints the store every `QUEEN_RAFT_DURABLE_EVERY_MS`, as on one
    /// node; none in tests that run the parts alone.
    pub checkpoints: Option<Checkpoints>,
}

pub struct Checkpoints {
    pub checkpointer: Checkpointer,
    pub every: Duration,
    pub last: Instant,
    /// The applied id of the last checkpoint handed over.
    pub done: LogId,
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("{what}: snapshots are not served over raft yet"))
}

/// Builds no snapshot yet (see the module's comment).
pub struct SnapshotBuilder;

impl RaftSnapshotBuilder<Queen> for SnapshotBuilder {
    type SnapshotData = PathBuf;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        Err(unsupported("building a snapshot"))
    }
}

impl RaftStateMachine<Queen> for RaftMachine {
    type SnapshotData = PathBuf;
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<RaftLogId>, Membership), io::Error> {
        let store = self.store.read().expect("store lock");
        let applied = to_raft(store.applied, store.applied_leader);
        let membership = match store.membership.get(&MEMBERSHIP_ROW.to_string()) {
            Some(row) => Membership::new(to_raft(row.log_id, row.leader), raft_membership(&row.membership)),
            None => Membership::default(),
        };
        Ok((applied, membership))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: futures_util::Stream<Item = Result<EntryResponder<Queen>, io::Error>> + Unpin + OptionalSend,
    {
        let mut queues = Vec::new();
        while let Some(next) = entries.next().await {
            let (raft_entry, responder) = next?;
            let (entry, _) = to_qlog_entry(&raft_entry);
            let locations = match self.log.locations(entry.id.index) {
                Some(at) if at.id == entry.id => at.messages,
                _ if entry.messages.is_empty() => vec![],
                _ => {
                    return Err(io::Error::other(format!(
                        "entry {} is applied, and the log does not say where its message records sit",
                        entry.id
                    )))
                }
            };
            queues.extend(entry.messages.iter().map(|m| m.span.queue));
            let applied = self.guard.apply(&mut self.store.write().expect("store lock"), &entry, &locations);
            if let Err(failure) = applied {
                // openraft stops on a state machine error: this node
                // applies nothing more until the entry is skipped.
                self.apply_watch.batch_applied(queues);
                return Err(io::Error::other(format!(
                    "apply refused committed entry {} (digest {}): {}",
                    failure.index, failure.digest, failure.error
                )));
            }
            let voided = self.log.applied(entry.id.index);
            if let Some(responder) = responder {
                responder.send(if voided { Applied::Voided } else { Applied::Applied });
            }
        }
        queues.sort_unstable();
        queues.dedup();
        self.apply_watch.batch_applied(queues);
        if let Some(c) = self.checkpoints.as_mut().filter(|c| c.last.elapsed() >= c.every) {
            c.checkpointer.changed(&self.store, &mut c.done);
            c.last = Instant::now();
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder
    }

    async fn install_snapshot(&mut self, _meta: &SnapshotMeta, _snapshot: PathBuf) -> Result<(), io::Error> {
        Err(unsupported("installing a snapshot"))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        Ok(None)
    }
}
