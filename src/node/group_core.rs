//! One raft group's part of a node: its store, its queue logs, its raft
//! state and the replicator that writes them. Every group has the same
//! layout (storage.md, "The data directory"): group 0 in the data directory
//! itself, each extra group of `QUEEN_RAFT_GROUPS` under `groups/g<N>/`.
//! A cluster is founded with one group today (`founding.rs` refuses more),
//! so a node boots group 0 only; the groups to come boot through here too.

use super::boot_error::BootError;
use crate::apply_watch::ApplyWatch;
use crate::clock::Clock;
use crate::config::Settings;
use crate::encryption::Cipher;
use crate::log_boot::{LogSite, OpenedLog, Writing};
use crate::metrics::Metrics;
use crate::planner::effect::Entry;
use crate::planner::Planner;
use crate::qlog::files::{FileTable, Location};
use crate::qlog::layout::{Layout, FORMAT, RAFT_FORMAT};
use crate::qlog::retired::RetiredLogs;
use crate::qlog::sync_ledger::SyncLedger;
use crate::reader::MessageReader;
use crate::recovery::{Replay, ReplayApply};
use crate::replicate::local::{LocalReplicator, Pipeline};
use crate::replicate::log_store::raft_state::RaftState;
use crate::replicate::raft::apply_guard::ApplyGuard;
use crate::replicate::raft::force_recover::force_recover;
use crate::replicate::raft::log_storage::RaftLog;
use crate::replicate::raft::port::PortShare;
use crate::replicate::raft::replicator::{Cluster, RaftReplicator, ReclaimBound};
use crate::replicate::raft::snapshot_transfer::install_staged;
use crate::replicate::raft::state_machine::{RaftMachine, SnapshotFiles};
use crate::replicate::raft::version_gate;
use crate::replicate::state_machine::after_apply::{AfterApply, CheckpointPace};
use crate::replicate::state_machine::snapshot::{self, Site};
use crate::replicate::Replicator;
use crate::state_view::StateView;
use crate::storage::os::OsStorage;
use crate::store::checkpoint::CheckpointFile;
use crate::store::checkpointer::Checkpointer;
use crate::store::{scrub, Store};
use crate::test_hooks::TestHooks;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// A booted group: what its front-end calls and the node's own machinery
/// (reclaim, retention, snapshots) reach.
pub struct GroupCore {
    /// The applied state, read-only, behind the replicator's read gate:
    /// what the front ends read through.
    pub view: StateView,
    /// Stored messages, read back through `view` and the files.
    pub reader: MessageReader,
    /// The store itself, for the node's own machinery (reclaim relocates
    /// records under its write lock); the front ends read `view`.
    pub state: Arc<RwLock<Store>>,
    pub files: Arc<FileTable>,
    pub replicator: Arc<dyn Replicator>,
    pub qlog_root: PathBuf,
    pub layout: Layout,
    /// The applied index of the last committed store checkpoint: reclaim
    /// keeps every file holding a record above it.
    pub checkpointed: Arc<AtomicU64>,
    /// Deleted queues' logs the writer let go of, for reclaim to remove.
    pub retired: Arc<RetiredLogs>,
    /// The store checkpoint, which the checkpointer writes and a snapshot
    /// copies.
    pub checkpoint: Arc<CheckpointFile>,
    /// Held by every reclaim pass, and by a snapshot's build for its whole
    /// copy (`state_machine/snapshot.rs`).
    pub reclaim: Arc<Mutex<()>>,
}

/// What a group's boot takes from its node: the settings and what every
/// group of the node shares.
pub struct GroupBoot<'a> {
    pub settings: &'a Settings,
    /// The group's own directory (store, qlog, raft, snapshots).
    pub dir: PathBuf,
    /// The cluster this group replicates over; none on a single node.
    pub cluster: Option<Cluster>,
    /// `LOCAL_REPLICATOR` or `RAFT_REPLICATOR`, as `cluster` says.
    pub replicator_name: &'static str,
    pub hooks: &'a TestHooks,
    pub ledger: Option<Arc<SyncLedger>>,
    pub cipher: Option<Arc<Cipher>>,
    pub metrics: Arc<Metrics>,
    pub clock: Arc<dyn Clock>,
    pub apply_watch: Arc<ApplyWatch>,
    /// How many qlog files the group keeps open at most.
    pub open_files: usize,
    /// The group's share of the raft port, in a cluster.
    pub port: Option<PortShare>,
}

impl GroupCore {
    /// Opens the group's directory: a staged snapshot first, then the
    /// layout, the store at its checkpoint, the qlog replayed onto it, and
    /// the replicator.
    pub fn boot(boot: GroupBoot<'_>) -> Result<Self, BootError> {
        let GroupBoot {
            settings,
            dir,
            cluster,
            replicator_name,
            hooks,
            ledger,
            cipher,
            metrics,
            clock,
            apply_watch,
            open_files,
            port,
        } = boot;
        // A snapshot staged for this boot replaces the store and the qlog
        // before either is opened; one sent over raft holds the log
        // through a point, after which the log takes up.
        let store_dir = dir.join("store");
        let raft_dir = dir.join("raft");
        let site = Site { storage: &OsStorage, data_dir: &dir, store_dir: &store_dir };
        let installed = match &cluster {
            Some(_) => install_staged(site, &RaftState::open(OsStorage::shared(), &raft_dir)?)?,
            None => snapshot::install_staged(site)?,
        };
        if let Some(installed) = installed {
            tracing::info!(applied = %installed.applied, files = installed.files, bytes = installed.bytes, "installed the staged snapshot");
        }

        // The layout first: its FORMAT says whether this build can read the
        // checkpoint's rows at all.
        let qlog_root = dir.join("qlog");
        let wanted = Layout {
            lanes: settings.qlog_lanes,
            shards: settings.qlog_shards,
            replicator: replicator_name.into(),
            groups: settings.raft_groups,
        };
        let target = if cluster.is_some() { RAFT_FORMAT } else { FORMAT };
        let site = LogSite { storage: OsStorage::shared(), root: qlog_root.clone(), wanted, format: target };
        let laid_out = site.lay_out()?;

        let checkpoint = Arc::new(CheckpointFile::open(&store_dir)?);
        let mut store = Store::from_rows(checkpoint.load()?, checkpoint.path())?;
        let checkpointed = Arc::new(AtomicU64::new(store.applied.index));
        tracing::info!(applied = %store.applied, queues = store.queues.len(), "store reopened at its checkpoint");
        if cipher.is_none() {
            let sealed = store.queues.iter().find(|(_, row)| store.traits(row.id).encrypted);
            if let Some((name, _)) = sealed {
                return Err(BootError::EncryptedQueueWithoutKey(name.clone()));
            }
        }

        // Under raft, durable is not committed: a boot replays through the
        // committed index, and openraft brings the rest;
        let raft_state = match cluster {
            Some(_) => Some(RaftState::open(OsStorage::shared(), &raft_dir)?),
            None => None,
        };
        // A cluster's apply is guarded: an entry apply refuses stops the
        // node's apply, at boot too, and is reported (`apply_guard.rs`).
        let guard = match &raft_state {
            Some(_) => {
                let refuse = hooks.apply_refuse_kv_key.clone();
                Some(Arc::new(ApplyGuard::open(
                    OsStorage::shared(),
                    &raft_dir,
                    settings.raft_apply_skip.as_deref(),
                    refuse,
                )?))
            }
            None => None,
        };
        let guarded = guard.clone().map(|g| move |s: &mut Store, e: &Entry, at: &[Location]| g.apply(s, e, at).is_ok());
        // and the log holds every entry openraft has not purged.
        let replay = match &raft_state {
            Some(state) => state.replay(guarded.as_ref().map(|g| g as ReplayApply))?,
            None => Replay::default(),
        };
        let retired = Arc::new(RetiredLogs::default());
        let writing = Writing {
            segment_bytes: settings.segment_bytes,
            seal_age: Duration::from_secs(settings.seal_age_s),
            clock: clock.clone(),
            retired: retired.clone(),
        };
        let log = laid_out.recover(&mut store, open_files, (ledger.as_deref(), replay), writing)?;
        // One node raises its own catalogue at boot (`LocalReplicator`), so
        // an older build refuses its directory as a cluster member's.
        let catalogue = hooks.effect_catalogue.unwrap_or(version_gate::EFFECT_CATALOGUE);
        version_gate::check(cluster.as_ref().map_or(catalogue, |c| c.catalogue), &store)?;
        tracing::info!(last = %log.last, replayed = log.replayed, cut = log.cut, "qlog recovered");
        if log.found_format != target {
            Layout::upgrade_format(log.files.storage(), &qlog_root, target)?;
            tracing::info!(from = log.found_format, to = target, "upgraded the data directory's on-disk format: its records read as they are, and only qlog/FORMAT changed");
        }
        metrics.applied_index.set(store.applied.index as i64);
        let OpenedLog { layout, files, writer, last, .. } = log;
        // Batches planned from now on are later than anything applied.
        store.applied_us = store.applied_us.max(clock.wall_us());
        let state = Arc::new(RwLock::new(store));
        scrub::start(checkpoint.clone(), Duration::from_secs(settings.scrub_every_s), settings.scrub_rows_per_s);
        crate::qlog::scrub::verify_after_boot(OsStorage::shared(), qlog_root.clone());
        let qlog_scrub_every = Duration::from_secs(settings.qlog_scrub_every_s);
        crate::qlog::scrub::start(
            OsStorage::shared(),
            qlog_root.clone(),
            qlog_scrub_every,
            settings.qlog_scrub_bytes_per_s,
        );
        let durable_every = Duration::from_millis(settings.durable_every_ms);
        let reclaim: Arc<Mutex<()>> = Arc::default();
        let (replicator, checkpointed): (Arc<dyn Replicator>, _) = match (cluster, raft_state, port) {
            (Some(cluster), Some(raft_state), Some(port)) => {
                let log = RaftLog::start(writer, files.clone(), raft_state.clone(), metrics.clone(), ledger.clone())
                    .map_err(|source| BootError::Io { path: raft_dir.clone(), source })?;
                if let Some(named) = settings.raft_force_recover {
                    let me = (named, cluster.me, cluster.peers[&cluster.me].clone());
                    let done = force_recover(me, &*OsStorage::shared(), &raft_dir, &raft_state, &log)?;
                    tracing::warn!(
                        term = done.term,
                        index = done.index,
                        "QUEEN_RAFT_FORCE_RECOVER: this node is now the only voter"
                    );
                }
                let done = state.read().expect("store lock").applied;
                let machine = RaftMachine {
                    store: state.clone(),
                    log: log.clone(),
                    guard: guard.expect("a cluster's apply is guarded"),
                    snapshots: Some(SnapshotFiles {
                        storage: OsStorage::shared(),
                        data_dir: dir.clone(),
                        store_dir: store_dir.clone(),
                        checkpoint: checkpoint.clone(),
                        reclaim: reclaim.clone(),
                        clock: clock.clone(),
                        built: Arc::default(),
                    }),
                    after: AfterApply {
                        metrics: metrics.clone(),
                        apply_watch: apply_watch.clone(),
                        checkpoints: Some(CheckpointPace::new(
                            Checkpointer::start(checkpoint.clone(), checkpointed.clone()),
                            (durable_every, settings.durable_every_bytes),
                            done,
                        )),
                    },
                };
                // Reclaim keeps every record a replay from the checkpoint
                // or a follower the log still reaches may need: below both
                // the checkpoint and the raft purge point (`hold_purges`).
                let reclaim_below = Arc::new(AtomicU64::new(0));
                let bounds = ReclaimBound { checkpointed: checkpointed.clone(), below: reclaim_below.clone() };
                let replicator = RaftReplicator::start(cluster, log, machine, bounds, clock.clone(), port)?;
                (Arc::new(replicator), reclaim_below)
            }
            _ => {
                let replicator = LocalReplicator::start(Pipeline {
                    planner: Planner::new(1, last),
                    writer,
                    files: files.clone(),
                    ledger: ledger.clone(),
                    state: state.clone(),
                    checkpointer: Checkpointer::start(checkpoint.clone(), checkpointed.clone()),
                    checkpointed: checkpointed.clone(),
                    durable_every,
                    durable_every_bytes: settings.durable_every_bytes,
                    metrics: metrics.clone(),
                    apply_watch: apply_watch.clone(),
                    clock: clock.clone(),
                    catalogue,
                });
                (Arc::new(replicator), checkpointed)
            }
        };
        let view = StateView::new(state.clone(), replicator.clone());
        let reader = MessageReader { view: view.clone(), files: files.clone(), cipher };
        Ok(Self {
            view,
            reader,
            state,
            files,
            replicator,
            qlog_root,
            layout,
            checkpointed,
            retired,
            checkpoint,
            reclaim,
        })
    }
}
