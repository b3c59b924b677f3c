//! openraft's state machine over the store: apply runs each committed entry
//! through the planner's `apply` (idempotent by index, clock-free), with the
//! locations of its message records from the log, and answers the leader's
//! waiting client whether it applied or was voided.
//!
//! Snapshots are the store checkpoint and the queue log files
//! (`state_machine/snapshot.rs`), so building one is not a copy: openraft's
//! build (which only lets it purge the log through it) names the last
//! durable checkpoint, and the copy is made when a node behind needs it
//! (`get_current_snapshot`), through the checkpoint standing then. The
//! receiver stages it and installs it at its next boot
//! (`snapshot_transfer.rs`); `install_snapshot` is never called.

use super::apply_guard::ApplyGuard;
use super::log_storage::RaftLog;
use super::types::{raft_membership, to_qlog_entry, to_raft, Applied, Queen, RaftLogId};
use crate::clock::Clock;
use crate::log_id::LogId;
use crate::replicate::state_machine::after_apply::{AfterApply, AppliedBatch};
use crate::replicate::state_machine::snapshot::{self, Manifest, Site};
use crate::storage::{remove_tree, Storage};
use crate::store::checkpoint::CheckpointFile;
use crate::store::rows::MembershipRow;
use crate::store::{Store, MEMBERSHIP_ROW};
use futures_util::StreamExt;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::OptionalSend;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

type Snapshot = openraft::type_config::alias::SnapshotOf<Queen, PathBuf>;
type SnapshotMeta = openraft::type_config::alias::SnapshotMetaOf<Queen>;
type Membership = openraft::type_config::alias::StoredMembershipOf<Queen>;

pub struct RaftMachine {
    pub store: Arc<RwLock<Store>>,
    pub log: RaftLog,
    /// Applies, skips what QUEEN_RAFT_APPLY_SKIP names, and stops at an
    /// entry apply refuses.
    pub guard: Arc<ApplyGuard>,
    /// What snapshots are built from; none in tests that run the parts
    /// alone, which serve none.
    pub snapshots: Option<SnapshotFiles>,
    /// Counts, wakes readers and checkpoints as on one node.
    pub after: AfterApply,
}

/// A state machine a cluster node's replicator runs: Queen's, or one that
/// wraps it (the cluster simulator's records every entry it applies).
pub trait Machine: RaftStateMachine<Queen, SnapshotData = PathBuf> {
    /// Queen's own, whose store, apply watch and guard the replicator reads.
    fn queen(&self) -> &RaftMachine;
}

impl Machine for RaftMachine {
    fn queen(&self) -> &RaftMachine {
        self
    }
}

/// What a snapshot is built from, on a node that serves them.
#[derive(Clone)]
pub struct SnapshotFiles {
    pub storage: Arc<dyn Storage>,
    pub data_dir: PathBuf,
    /// The store checkpoint's directory, outside the seam (`snapshot::Site`).
    pub store_dir: PathBuf,
    pub checkpoint: Arc<CheckpointFile>,
    /// Held by reclaim, and by a copy for its whole length.
    pub reclaim: Arc<Mutex<()>>,
    /// Names each copy by the wall clock: a receiver keeps a transfer's
    /// files by its name.
    pub clock: Arc<dyn Clock>,
    /// Whether openraft built a snapshot since this boot: until then it has
    /// none to send (and a boot must not copy the whole log to learn so).
    pub built: Arc<AtomicBool>,
}

/// Where copies made for sending go; the newest two are kept.
const OUT: &str = "snapshots/out";

impl SnapshotFiles {
    /// The meta of a snapshot through a checkpoint applied through `at`
    /// (led by `leader`) and holding `membership`: the membership as of
    /// `at`, which the live store may have moved past.
    fn meta(at: LogId, leader: u64, membership: Option<&MembershipRow>) -> Option<SnapshotMeta> {
        let last_log_id = to_raft(at, leader)?;
        let membership = match membership {
            Some(row) => Membership::new(to_raft(row.log_id, row.leader), raft_membership(&row.membership)),
            None => Membership::default(),
        };
        Some(SnapshotMeta { last_log_id: Some(last_log_id), last_membership: membership })
    }

    /// Copies the node's state into a new directory under `snapshots/out`.
    fn copy(&self) -> io::Result<(PathBuf, Manifest)> {
        let storage = &*self.storage;
        let out = self.data_dir.join(OUT);
        storage.create_dir_all(&out)?;
        let mut old: Vec<String> = storage.list(&out)?.into_iter().map(|e| e.name).collect();
        old.sort();
        for name in old.iter().rev().skip(1) {
            let _ = remove_tree(storage, &out.join(name));
        }
        let into = out.join(format!("{:020}", self.clock.wall_us().max(0)));
        // Two peers behind may ask within one tick of the clock: the copy
        // made for the first serves the second (openraft takes a failed
        // copy for a broken disk and stops; the cluster simulator's seed 184).
        let snapshot_error = |e: snapshot::SnapshotError| io::Error::other(e.to_string());
        if let Some(manifest) = snapshot::manifest(storage, &into).map_err(snapshot_error)? {
            return Ok((into, manifest));
        }
        remove_tree(storage, &into)?;
        let site = Site { storage, data_dir: &self.data_dir, store_dir: &self.store_dir };
        let source = snapshot::Source { site, checkpoint: &self.checkpoint, reclaim: &self.reclaim };
        let manifest = snapshot::build(&source, &into).map_err(snapshot_error)?;
        Ok((into, manifest))
    }
}

/// openraft's build: the meta of the last durable checkpoint.
pub struct SnapshotBuilder {
    snapshot: Option<Snapshot>,
}

impl RaftSnapshotBuilder<Queen> for SnapshotBuilder {
    type SnapshotData = PathBuf;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        self.snapshot.take().ok_or_else(|| io::Error::other("a snapshot builder builds once"))
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
        let (mut queues, mut count, mut bytes) = (Vec::new(), 0, 0);
        while let Some(next) = entries.next().await {
            let (raft_entry, responder) = next?;
            let (entry, _) = to_qlog_entry(&raft_entry);
            self.log.durable_through(entry.id.index).await;
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
            bytes += locations.iter().map(|at| at.frame_len as u64).sum::<u64>();
            let applied = self.guard.apply(&mut self.store.write().expect("store lock"), &entry, &locations);
            if let Err(failure) = applied {
                // openraft stops on a state machine error: this node
                // applies nothing more until the entry is skipped.
                self.after.apply_watch.batch_applied(queues);
                return Err(io::Error::other(format!(
                    "apply refused committed entry {} (digest {}): {}",
                    failure.index, failure.digest, failure.error
                )));
            }
            count += 1;
            let voided = self.log.applied(entry.id.index);
            if let Some(responder) = responder {
                responder.send(if voided { Applied::Voided } else { Applied::Applied });
            }
        }
        let applied_index = self.store.read().expect("store lock").applied.index;
        let batch = AppliedBatch { entries: count, bytes, applied_index, started: None, queues };
        self.after.batch(&self.store, batch);
        Ok(())
    }

    async fn try_create_snapshot_builder(&mut self, _force: bool) -> Option<Self::SnapshotBuilder> {
        let files = self.snapshots.as_ref()?;
        let standing = match files.checkpoint.standing() {
            Ok(standing) => standing,
            Err(e) => {
                tracing::warn!(error = %e, "the checkpoint could not be read: no snapshot now");
                return None;
            }
        };
        let meta = SnapshotFiles::meta(standing.applied, standing.leader, standing.membership.as_ref())?;
        files.built.store(true, Ordering::Release);
        Some(SnapshotBuilder { snapshot: Some(Snapshot { meta, snapshot: PathBuf::new() }) })
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder { snapshot: None }
    }

    async fn install_snapshot(&mut self, _meta: &SnapshotMeta, _snapshot: PathBuf) -> Result<(), io::Error> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a snapshot is installed at the next boot (snapshot_transfer.rs), never by openraft",
        ))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let Some(files) = self.snapshots.clone().filter(|f| f.built.load(Ordering::Acquire)) else { return Ok(None) };
        // A copy of the whole log: off the runtime's cooperative path, where
        // it has other threads (the simulator's one thread copies inline).
        let (dir, manifest) = match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::CurrentThread => files.copy(),
            _ => tokio::task::block_in_place(|| files.copy()),
        }?;
        let meta = SnapshotFiles::meta(manifest.applied, manifest.applied_leader, manifest.membership.as_ref())
            .ok_or_else(|| {
                io::Error::other(format!("a checkpoint applied through {} is no raft position", manifest.applied))
            })?;
        tracing::info!(through = %manifest.applied, files = manifest.files, bytes = manifest.bytes, "copied a snapshot to send");
        Ok(Some(Snapshot { meta, snapshot: dir }))
    }
}
