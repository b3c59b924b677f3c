//! One cluster node's process: booted through the real boot path on its
//! simulated storage (the store from its LMDB checkpoint, then the layout,
//! and recovery through the saved committed index, every unpurged entry
//! held), and run by the replicator that ships
//! (`RaftReplicator`: its proposer, forwarding, read gate and raft port,
//! over the simulated network), with openraft over Queen's log storage and
//! state machine, which builds snapshots on the simulated disk and sends
//! them to a node away past the purge hold. The log's syncer and committed-id writer are stepped by
//! tasks of this runtime (`RaftLog::stepped`), each fdatasync taking the
//! time the seed gives it; a crash kills the process's storage at once
//! (`Fenced`) and then shuts its openraft down.

use super::fenced::Fenced;
use super::ledger::Ledger;
use super::network::{address, Net};
use super::storage::SimStorage;
use futures_util::StreamExt;
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{OptionalSend, Raft};
use queen::seams::boot::ReplayApply;
use queen::seams::boot::{group_dir, LogSite, Writing};
use queen::seams::clock::Clock;
use queen::seams::planner::Entry;
use queen::seams::qlog::{FileTable, Location};
use queen::seams::qlog::{Layout, RAFT_FORMAT};
use queen::seams::raft::install_staged;
use queen::seams::raft::ApplyGuard;
use queen::seams::raft::RaftLog;
use queen::seams::raft::EFFECT_CATALOGUE;
use queen::seams::raft::{split_port, Listener, Transport};
use queen::seams::raft::{Cluster, Ground, RaftReplicator, ReclaimBound};
use queen::seams::raft::{Machine, RaftMachine, SnapshotFiles};
use queen::seams::raft::{Queen, RaftLogId};
use queen::seams::replicate::snapshot::Site;
use queen::seams::replicate::RaftState;
use queen::seams::replicate::{AfterApply, CheckpointPace};
use queen::seams::storage::{create_dir_durable, Storage};
use queen::seams::store::CheckpointFile;
use queen::seams::store::Checkpointer;
use queen::seams::store::Member;
use queen::seams::store::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub type SimRaft = Raft<Queen, Recorded>;
type SnapshotData = <RaftMachine as RaftStateMachine<Queen>>::SnapshotData;
type SnapshotBuilder = <RaftMachine as RaftStateMachine<Queen>>::SnapshotBuilder;

const DATA_DIR: &str = "/node";
const SEGMENT_BYTES: u64 = 16 * 1024;
const SEAL_AGE: Duration = Duration::from_secs(30);
/// When a checkpoint is written: by time, or sooner by bytes applied
/// (`QUEEN_RAFT_DURABLE_EVERY_MS`, `_BYTES`; small, so that a run writes many).
const CHECKPOINT_EVERY: (Duration, u64) = (Duration::from_millis(300), 64 * 1024);
/// How long the leader keeps log entries a follower away may need: one
/// away longer is sent a snapshot (`QUEEN_RAFT_PURGE_HOLD_S`; short, so
/// that a run sends many).
const PURGE_HOLD: Duration = Duration::from_secs(1);
/// How often the committed id is written, as `committed.rs`'s thread does.
const COMMITTED_EVERY: Duration = Duration::from_millis(100);

/// The planner's wall clock at the simulation's start.
const EPOCH_US: i64 = 1_700_000_000_000_000;

/// A node's clocks in the simulation's time: the monotonic one from the
/// node's boot, the wall clock from the simulation's start (the same on
/// every node).
struct SimClock {
    boot: Instant,
    epoch: Instant,
}

impl Clock for SimClock {
    fn monotonic_us(&self) -> u64 {
        self.boot.elapsed().as_micros() as u64
    }

    fn wall_us(&self) -> i64 {
        EPOCH_US + self.epoch.elapsed().as_micros() as i64
    }
}

/// The state machine, with every entry it applies also entered in the
/// cluster's ledger (which checks that every node applies the same entry at
/// each index).
pub struct Recorded {
    inner: RaftMachine,
    node: u64,
    ledger: Ledger,
}

impl RaftStateMachine<Queen> for Recorded {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<RaftLogId>, openraft::type_config::alias::StoredMembershipOf<Queen>), io::Error> {
        self.inner.applied_state().await
    }

    async fn apply<Strm>(&mut self, entries: Strm) -> Result<(), io::Error>
    where
        Strm: futures_util::Stream<Item = Result<EntryResponder<Queen>, io::Error>> + Unpin + OptionalSend,
    {
        let (ledger, node) = (self.ledger.clone(), self.node);
        let entries = entries.inspect(move |e| {
            if let Ok((entry, _)) = e {
                ledger.applied(node, entry);
            }
        });
        self.inner.apply(entries).await
    }

    async fn try_create_snapshot_builder(&mut self, force: bool) -> Option<SnapshotBuilder> {
        self.inner.try_create_snapshot_builder(force).await
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        self.inner.get_snapshot_builder().await
    }

    async fn install_snapshot(
        &mut self,
        meta: &openraft::type_config::alias::SnapshotMetaOf<Queen>,
        snapshot: SnapshotData,
    ) -> Result<(), io::Error> {
        self.inner.install_snapshot(meta, snapshot).await
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<openraft::type_config::alias::SnapshotOf<Queen, SnapshotData>>, io::Error> {
        self.inner.get_current_snapshot().await
    }
}

impl Machine for Recorded {
    fn queen(&self) -> &RaftMachine {
        &self.inner
    }
}

/// A node's running process.
pub struct Up {
    pub replicator: Arc<RaftReplicator<Recorded>>,
    pub log: RaftLog,
    pub store: Arc<RwLock<Store>>,
    pub files: Arc<FileTable>,
    fenced: Fenced,
    /// Set when a write or fdatasync failed: the process has stopped, as
    /// the syncer's FATAL line stops a real one.
    pub stopped: Arc<AtomicBool>,
    /// Set when the process exited to install a snapshot it staged.
    pub exited: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
    /// The process's further raft groups (`QUEEN_RAFT_GROUPS`), group 1
    /// first: each runs as group 0 does, and carries no client's command.
    pub others: Vec<Up>,
}

/// Group `g`'s store checkpoint directory, under the boot's.
pub fn group_store_dir(store_dir: &Path, g: u32) -> PathBuf {
    match g {
        0 => store_dir.to_path_buf(),
        g => store_dir.join(format!("g{g}")),
    }
}

/// What a process's groups share: its disk, its fate, its link to the
/// network.
struct Process {
    id: u64,
    ids: Vec<u64>,
    groups: u32,
    fenced: Fenced,
    stopped: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
    dialer: Arc<dyn Transport>,
    epoch: Instant,
    confirm_reads: bool,
}

/// How long a client's command may take before it answers `Timeout`
/// (`QUEEN_RAFT_WRITE_TIMEOUT_MS`).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Boots node `id` of `ids` on its disk (`storage`, and the real
/// directory of its store checkpoint) and starts its replicator, whose raft
/// port is on the simulated network; `rng` draws its fdatasync times, and
/// its planner's wall clock runs from `epoch`; `confirm_reads` off answers
/// reads without a read index (the old bug). A snapshot staged by the last
/// process is installed first, as a process's boot does.
/// With several ledgers, the process runs a raft group per ledger over its
/// one port, as `QUEEN_RAFT_GROUPS` does, group 0 the first.
pub async fn boot(
    (id, ids): (u64, &[u64]),
    (storage, store_dir): (&SimStorage, &Path),
    (net, ledgers): (Net, &[Ledger]),
    mut rng: StdRng,
    epoch: Instant,
    confirm_reads: bool,
) -> Result<Up, String> {
    let (dialer, port) = net.process(id);
    let groups = ledgers.len() as u32;
    let process = Process {
        id,
        ids: ids.to_vec(),
        groups,
        fenced: Fenced::new(storage.clone()),
        stopped: Arc::default(),
        exited: Arc::default(),
        dialer: Arc::new(dialer),
        epoch,
        confirm_reads,
    };
    let mut router = None;
    let listeners: Vec<Box<dyn Listener>> = if groups == 1 {
        vec![Box::new(port)]
    } else {
        let (routing, shares) = split_port(Box::new(port), groups);
        router = Some(tokio::spawn(routing));
        shares.into_iter().map(|s| s.listener().expect("a routed share needs no runtime")).collect()
    };
    let mut ups = Vec::new();
    for ((g, listener), ledger) in (0..groups).zip(listeners).zip(ledgers) {
        let rng = StdRng::from_rng(&mut rng).expect("a seeded rng");
        let booted = boot_group(&process, g, &group_store_dir(store_dir, g), listener, ledger.clone(), rng).await;
        match booted {
            Ok(up) => ups.push(up),
            Err(e) => {
                for up in ups {
                    up.kill();
                }
                router.inspect(|r| r.abort());
                return Err(if groups == 1 { e } else { format!("group {g}: {e}") });
            }
        }
    }
    let mut up = ups.remove(0);
    up.others = ups;
    up.tasks.extend(router);
    Ok(up)
}

/// Boots group `g` of `process`, its raft port's connections coming from
/// `listener`.
async fn boot_group(
    process: &Process,
    g: u32,
    store_dir: &Path,
    listener: Box<dyn Listener>,
    ledger: Ledger,
    mut rng: StdRng,
) -> Result<Up, String> {
    let Process { id, fenced, epoch, confirm_reads, .. } = process;
    let (id, epoch, confirm_reads) = (*id, *epoch, *confirm_reads);
    std::fs::create_dir_all(store_dir).map_err(|e| e.to_string())?;
    let fenced = fenced.clone();
    let shared: Arc<dyn Storage> = Arc::new(fenced.clone());
    let data_dir = group_dir(Path::new(DATA_DIR), g);
    let raft_dir = data_dir.join("raft");
    create_dir_durable(&*shared, &data_dir).map_err(|e| e.to_string())?;
    let state = RaftState::open(shared.clone(), &raft_dir).map_err(|e| e.to_string())?;
    let site = Site { storage: &*shared, data_dir: &data_dir, store_dir };
    if let Some(installed) = install_staged(site, &state).map_err(|e| e.to_string())? {
        trace(|| format!("node {id}: installed the staged snapshot, applied through {}", installed.applied));
    }
    let root = data_dir.join("qlog");
    let wanted = Layout { lanes: 1, shards: 0, replicator: "openraft".into(), groups: process.groups };
    let laid_out =
        LogSite { storage: shared.clone(), root, wanted, format: RAFT_FORMAT }.lay_out().map_err(|e| e.to_string())?;
    let guard = Arc::new(ApplyGuard::open(shared.clone(), &raft_dir, None, None).map_err(|e| e.to_string())?);
    let guarded = |s: &mut Store, e: &Entry, at: &[Location]| guard.apply(s, e, at).is_ok();
    let replay = state.replay(Some(&guarded as ReplayApply)).map_err(|e| e.to_string())?;
    let clock: Arc<dyn Clock> = Arc::new(SimClock { boot: Instant::now(), epoch });
    // The store as the last checkpoint left it; the log replays the rest.
    let checkpoint = Arc::new(CheckpointFile::open(store_dir).map_err(|e| e.to_string())?);
    let mut store = Store::from_rows(checkpoint.load().map_err(|e| e.to_string())?, checkpoint.path())
        .map_err(|e| e.to_string())?;
    let checkpointed = Arc::new(AtomicU64::new(store.applied.index));
    trace(|| format!("node {id}: its store from its checkpoint, applied through {}", store.applied));
    let writing =
        Writing { segment_bytes: SEGMENT_BYTES, seal_age: SEAL_AGE, clock: clock.clone(), retired: Arc::default() };
    let opened = laid_out.recover(&mut store, 64, (None, replay), writing).map_err(|e| e.to_string())?;
    let (files, writer) = (opened.files, opened.writer);
    let log = RaftLog::stepped(writer, files.clone(), state).map_err(|e| e.to_string())?;
    let applied = store.applied;
    let store = Arc::new(RwLock::new(store));
    let machine = RaftMachine {
        store: store.clone(),
        log: log.clone(),
        guard,
        after: AfterApply {
            metrics: Arc::default(),
            apply_watch: Arc::default(),
            checkpoints: Some(CheckpointPace::new(
                Checkpointer::inline(checkpoint.clone(), checkpointed.clone()),
                CHECKPOINT_EVERY,
                applied,
            )),
        },
        snapshots: Some(SnapshotFiles {
            storage: shared.clone(),
            data_dir: data_dir.to_path_buf(),
            store_dir: store_dir.to_path_buf(),
            checkpoint: checkpoint.clone(),
            reclaim: Arc::default(),
            clock: clock.clone(),
            built: Arc::default(),
        }),
    };
    let recorded = Recorded { inner: machine, node: id, ledger: ledger.clone() };
    let answered = ledger.clone();
    // The process exits to install the snapshot it staged: nothing it does
    // after reaches its disk, and the run boots it again.
    let exited = process.exited.clone();
    let staged_exit = {
        let (fenced, exited) = (fenced.clone(), exited.clone());
        Arc::new(move || {
            fenced.kill();
            exited.store(true, Ordering::Release);
        })
    };
    let ground = Ground {
        transport: process.dialer.clone(),
        storage: shared.clone(),
        listener,
        on_answered: Some(Arc::new(move |log_id| answered.answered(log_id))),
        confirm_reads,
        staged_exit,
    };
    let cluster = Cluster {
        me: id,
        peers: process.ids.iter().map(|id| (*id, Member { raft: address(*id), ..Member::default() })).collect(),
        token: "simulated".into(),
        listen: ([127, 0, 0, 1], 0).into(),
        join: false,
        write_timeout: WRITE_TIMEOUT,
        data_dir: data_dir.clone(),
        purge_hold: PURGE_HOLD,
        catalogue: EFFECT_CATALOGUE,
        group: g,
        groups: process.groups,
    };
    let reclaim = ReclaimBound { checkpointed, below: Arc::default() };

    let stopped = process.stopped.clone();
    let syncer = {
        let (log, stopped) = (log.clone(), stopped.clone());
        let mut rng = StdRng::from_rng(&mut rng).expect("a seeded rng");
        tokio::spawn(async move {
            loop {
                // An fdatasync takes 0.2 to 3 ms, now and then 40.
                let us = if rng.gen_ratio(1, 50) { 40_000 } else { rng.gen_range(200..3_000) };
                tokio::time::sleep(Duration::from_micros(us)).await;
                if let Err(e) = log.sync_staged() {
                    trace(|| format!("node {id}: a write or fdatasync failed, the process stops: {e}"));
                    stopped.store(true, Ordering::Release);
                    return;
                }
            }
        })
    };
    let committed = {
        let log = log.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(COMMITTED_EVERY).await;
                // A lagging committed id is safe, as in committed.rs.
                let _ = log.save_committed_now();
            }
        })
    };
    // The syncer runs from the log's opening, as a process's thread does:
    // a founder writes its membership again before openraft starts
    // (`refound.rs`) and waits for it to be durable.
    let replicator = match RaftReplicator::launch(cluster, log.clone(), recorded, reclaim, clock, ground).await {
        Ok(replicator) => replicator,
        Err(e) => {
            syncer.abort();
            committed.abort();
            return Err(e.to_string());
        }
    };
    let raft = replicator.raft().clone();
    let leaders = tokio::spawn(watch_leadership(raft, id, ledger));
    let replicator = Arc::new(replicator);
    let tasks = vec![syncer, committed, leaders];
    Ok(Up { replicator, log, store, files, fenced, stopped, exited, tasks, others: Vec::new() })
}

/// Enters every leadership this node takes in the ledger.
async fn watch_leadership(raft: SimRaft, id: u64, ledger: Ledger) {
    use openraft::async_runtime::watch::WatchReceiver;
    let mut metrics = raft.metrics();
    loop {
        {
            let m = metrics.borrow_watched();
            if m.state == openraft::ServerState::Leader {
                ledger.leads(id, m.current_term);
            }
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

impl Up {
    pub fn raft(&self) -> &SimRaft {
        self.replicator.raft()
    }

    /// The process dies: its storage refuses everything from this instant,
    /// its tasks end, and its openraft is shut down.
    pub fn kill(self) {
        for other in self.others {
            other.kill();
        }
        self.fenced.kill();
        self.files.abandon();
        for t in &self.tasks {
            t.abort();
        }
        self.replicator.abort();
        let raft = self.replicator.raft().clone();
        tokio::spawn(async move {
            let _ = raft.shutdown().await;
        });
    }
}

thread_local! {
    /// The simulation's start, which trace lines count from.
    pub static EPOCH: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
    /// The hash of everything recorded so far in this thread's run.
    pub static TRACE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The simulation's time, in microseconds since its start.
fn now_us() -> u128 {
    EPOCH.with(|e| e.get()).map_or(0, |e| e.elapsed().as_micros())
}

/// Folds `event`, at the simulation's time, into the run's trace hash: two
/// runs of a seed that record the same events at the same times agree.
pub fn record(event: impl Hash) {
    let mut h = DefaultHasher::new();
    (TRACE.with(|t| t.get()), now_us(), event).hash(&mut h);
    TRACE.with(|t| t.set(h.finish()));
}

/// Records what happens in the trace hash, and with `QUEEN_SIM_TRACE` set
/// tells it on stderr, at the simulation's time.
pub fn trace(line: impl FnOnce() -> String) {
    let line = line();
    record(&line);
    if std::env::var_os("QUEEN_SIM_TRACE").is_some() {
        let at = now_us();
        eprintln!("[{:>6}.{:03}] {}", at / 1000, at % 1000, line);
    }
}
