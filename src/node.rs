//! A node: boot (store, qlog layout, recovery), the replicator, and what the
//! front ends share.

use crate::apply_watch::ApplyWatch;
use crate::auth_policy::{Policy, PolicyError};
use crate::clock::{Clock, SystemClock};
use crate::config::Settings;
use crate::data_dir_lock::{DataDirLock, DataDirLockError};
use crate::disk_gate::DiskGate;
use crate::encryption::{Cipher, EncryptionError, Sealer};
use crate::ephemeral::{EphOptions, Ephemeral};
use crate::fd_limit;
use crate::internal_kv::EPHEMERAL_DECLARATIONS;
use crate::jwt::{Auth, AuthConfigError};
use crate::log_boot::{LogSite, OpenedLog, Writing};
use crate::metrics::Metrics;
use crate::planner::effect::Entry;
use crate::planner::Planner;
use crate::qlog::files::{FileTable, Location};
use crate::qlog::layout::{Layout, LayoutError, FORMAT, RAFT_FORMAT};
use crate::qlog::retired::RetiredLogs;
use crate::qlog::sync_ledger::SyncLedger;
use crate::reader::MessageReader;
use crate::recovery::{RecoveryError, Replay, ReplayApply};
use crate::replicate::local::{LocalReplicator, Pipeline};
use crate::replicate::log_store::raft_state::{RaftState, RaftStateError};
use crate::replicate::raft::apply_guard::{ApplyGuard, ApplyGuardError};
use crate::replicate::raft::force_recover::{force_recover, ForceRecoverError};
use crate::replicate::raft::founding::{self, FoundingError};
use crate::replicate::raft::log_storage::RaftLog;
use crate::replicate::raft::replicator::{ClusterError, RaftReplicator, ReclaimBound};
use crate::replicate::raft::snapshot_transfer::{install_staged, ReceiveError};
use crate::replicate::raft::state_machine::{RaftMachine, SnapshotFiles};
use crate::replicate::raft::version_gate::{self, TooOld};
use crate::replicate::state_machine::after_apply::{AfterApply, CheckpointPace};
use crate::replicate::state_machine::snapshot::{self, Site, SnapshotError};
use crate::replicate::Replicator;
use crate::state_view::StateView;
use crate::storage::os::OsStorage;
use crate::store::checkpoint::{CheckpointError, CheckpointFile};
use crate::store::checkpointer::Checkpointer;
use crate::store::{scrub, Store};
use crate::test_hooks::{TestHookError, TestHooks};
use facade::groups::ShareGroups;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

/// The replicator a data directory belongs to (storage.md): one node's,
/// or a cluster's.
pub const LOCAL_REPLICATOR: &str = "local";
pub const RAFT_REPLICATOR: &str = "openraft";

#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Locked(#[from] DataDirLockError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    #[error(transparent)]
    Auth(#[from] AuthConfigError),
    #[error(transparent)]
    AuthPolicy(#[from] PolicyError),
    #[error(transparent)]
    Encryption(#[from] EncryptionError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    TestHook(#[from] TestHookError),
    #[error("queue {0:?} is configured with encryptionEnabled and QUEEN_ENCRYPTION_KEY is not set: its messages cannot be read")]
    EncryptedQueueWithoutKey(String),
    #[error(transparent)]
    Founding(#[from] FoundingError),
    #[error(transparent)]
    RaftState(#[from] RaftStateError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    ApplyGuard(#[from] ApplyGuardError),
    #[error(transparent)]
    ForceRecover(#[from] ForceRecoverError),
    #[error(transparent)]
    StagedSnapshot(#[from] ReceiveError),
    #[error(transparent)]
    TooOld(#[from] TooOld),
}

/// What the front ends share.
pub struct Node {
    pub settings: Settings,
    /// `LOCAL_REPLICATOR` or `RAFT_REPLICATOR`.
    pub replicator_name: &'static str,
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
    pub metrics: Arc<Metrics>,
    /// Wakes readers after every apply: any, or per queue appended to.
    pub apply_watch: Arc<ApplyWatch>,
    /// JWT authentication, when `JWT_ENABLED=true`.
    pub auth: Option<Arc<Auth>>,
    /// Ephemeral queues: in this process's memory only.
    pub ephemeral: Ephemeral,
    pub disk_gate: DiskGate,
    /// QUEEN_ENCRYPTION_KEY, for queues configured with encryptionEnabled.
    pub cipher: Option<Arc<Cipher>>,
    /// When this process booted, for uptime and rates since then.
    pub started_us: i64,
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
    /// The node's monotonic clock: the qlog writer's seal age and reclaim's
    /// pass budget are measured on it.
    pub clock: Arc<dyn Clock>,
    /// Held by every reclaim pass, and by a snapshot's build for its whole
    /// copy (`state_machine/snapshot.rs`).
    pub reclaim: Arc<Mutex<()>>,
    /// The Kafka listener's share group members (KIP-932 keeps them in the
    /// coordinator's memory), set once the listener starts, so that the
    /// HTTP consumer-group view can show who holds a share group's records.
    pub kafka_share_members: OnceLock<Arc<ShareGroups>>,
    /// This process's hold on the data directory, for as long as it runs.
    _dir_lock: DataDirLock,
}

impl Node {
    pub fn boot(settings: Settings) -> Result<Self, BootError> {
        Policy::of(&settings)?.log();
        let hooks = TestHooks::from_env()?;
        let cluster = founding::cluster(&settings, hooks.effect_catalogue)?;
        let replicator_name = if cluster.is_some() { RAFT_REPLICATOR } else { LOCAL_REPLICATOR };
        let auth = Auth::from_settings(&settings)?.map(Arc::new);
        let cipher = settings.encryption_key.as_deref().map(Cipher::from_hex).transpose()?.map(Arc::new);
        let disk_gate = DiskGate::new(settings.data_dir.clone(), settings.storage_full_pct);
        let dir = &settings.data_dir;
        std::fs::create_dir_all(dir).map_err(|source| BootError::Io { path: dir.clone(), source })?;
        let dir_lock = DataDirLock::acquire(dir)?;
        // A snapshot staged for this boot replaces the store and the qlog
        // before either is opened; one sent over raft holds the log
        // through a point, after which the log takes up.
        let store_dir = dir.join("store");
        let site = Site { storage: &OsStorage, data_dir: dir, store_dir: &store_dir };
        let installed = match &cluster {
            Some(_) => install_staged(site, &RaftState::open(OsStorage::shared(), &dir.join("raft"))?)?,
            None => snapshot::install_staged(site)?,
        };
        if let Some(installed) = installed {
            tracing::info!(applied = %installed.applied, files = installed.files, bytes = installed.bytes, "installed the staged snapshot");
        }
        let ledger = match &hooks.sync_ledger {
            Some(p) => Some(Arc::new(SyncLedger::open(p).map_err(|source| BootError::Io { path: p.clone(), source })?)),
            None => None,
        };

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

        let open_files = fd_limit::open_files(settings.qlog_open_files, fd_limit::raise_to_hard());
        tracing::info!(open_files, "qlog files kept open at most (QUEEN_QLOG_OPEN_FILES)");
        // Under raft, durable is not committed: a boot replays through the
        // committed index, and openraft brings the rest;
        let raft_state = match cluster {
            Some(_) => Some(RaftState::open(OsStorage::shared(), &dir.join("raft"))?),
            None => None,
        };
        // A cluster's apply is guarded: an entry apply refuses stops the
        // node's apply, at boot too, and is reported (`apply_guard.rs`).
        let guard = match &raft_state {
            Some(_) => {
                let refuse = hooks.apply_refuse_kv_key.clone();
                Some(Arc::new(ApplyGuard::open(
                    OsStorage::shared(),
                    &dir.join("raft"),
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
        let metrics = Arc::new(Metrics::default());
        let retired = Arc::new(RetiredLogs::default());
        let clock = SystemClock::shared();
        let writing = Writing {
            segment_bytes: settings.segment_bytes,
            seal_age: Duration::from_secs(settings.seal_age_s),
            clock: clock.clone(),
            retired: retired.clone(),
        };
        let log = laid_out.recover(&mut store, open_files, (ledger.as_deref(), replay), writing)?;
        if let Some(cluster) = &cluster {
            version_gate::check(cluster.catalogue, &store)?;
        }
        tracing::info!(last = %log.last, replayed = log.replayed, cut = log.cut, "qlog recovered");
        if log.found_format != target {
            Layout::upgrade_format(log.files.storage(), &qlog_root, target)?;
            tracing::info!(from = log.found_format, to = target, "upgraded the data directory's on-disk format: its records read as they are, and only qlog/FORMAT changed");
        }
        metrics.applied_index.set(store.applied.index as i64);
        let OpenedLog { layout, files, writer, last, .. } = log;
        // Batches planned from now on are later than anything applied.
        store.applied_us = store.applied_us.max(clock.wall_us());
        let ephemeral = Ephemeral::default();
        let prefix = format!("{EPHEMERAL_DECLARATIONS}\0");
        for (key, row) in store.kv.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)) {
            let given = serde_json::from_str::<serde_json::Value>(&row.value).ok();
            let options =
                given.as_ref().and_then(|v| v.as_object()).and_then(|m| EphOptions::parse(m).ok()).unwrap_or_default();
            ephemeral.declare(&key[prefix.len()..], options);
        }
        let state = Arc::new(RwLock::new(store));
        let apply_watch = Arc::new(ApplyWatch::default());
        scrub::start(checkpoint.clone(), Duration::from_secs(settings.scrub_every_s), settings.scrub_rows_per_s);
        let qlog_scrub_every = Duration::from_secs(settings.qlog_scrub_every_s);
        crate::qlog::scrub::start(
            OsStorage::shared(),
            qlog_root.clone(),
            qlog_scrub_every,
            settings.qlog_scrub_bytes_per_s,
        );
        let durable_every = Duration::from_millis(settings.durable_every_ms);
        let reclaim: Arc<Mutex<()>> = Arc::default();
        let (replicator, checkpointed): (Arc<dyn Replicator>, _) = match (cluster, raft_state) {
            (Some(cluster), Some(raft_state)) => {
                let raft_dir = dir.join("raft");
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
                (Arc::new(RaftReplicator::start(cluster, log, machine, bounds, clock.clone())?), reclaim_below)
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
                });
                (Arc::new(replicator), checkpointed)
            }
        };
        let view = StateView::new(state.clone(), replicator.clone());
        let reader = MessageReader { view: view.clone(), files: files.clone(), cipher: cipher.clone() };
        Ok(Self {
            settings,
            replicator_name,
            view,
            reader,
            state,
            files,
            replicator,
            metrics,
            apply_watch,
            auth,
            ephemeral,
            disk_gate,
            cipher,
            started_us: chrono::Utc::now().timestamp_micros(),
            qlog_root,
            layout,
            checkpointed,
            retired,
            checkpoint,
            clock,
            reclaim,
            kafka_share_members: OnceLock::new(),
            _dir_lock: dir_lock,
        })
    }

    /// Seals the messages of one request for the queues configured with
    /// encryptionEnabled.
    pub fn sealer(&self) -> Sealer<'_> {
        Sealer::new(&self.view, self.cipher.as_deref())
    }
}
