//! A node: boot (store, qlog layout, recovery), the replicator, and what the
//! front ends share.

mod boot_error;
mod group_core;

pub use boot_error::BootError;
use group_core::GroupBoot;
pub use group_core::GroupCore;

use crate::apply_watch::ApplyWatch;
use crate::auth_policy::Policy;
use crate::clock::{Clock, SystemClock};
use crate::config::Settings;
use crate::data_dir_lock::DataDirLock;
use crate::disk_gate::DiskGate;
use crate::encryption::{Cipher, Sealer};
use crate::ephemeral::{EphOptions, Ephemeral};
use crate::fd_limit;
use crate::internal_kv::EPHEMERAL_DECLARATIONS;
use crate::jwt::Auth;
use crate::metrics::Metrics;
use crate::placement;
use crate::qlog::sync_ledger::SyncLedger;
use crate::replicate::raft::founding;
use crate::replicate::raft::port::{self, PortShare, RaftPort};
use crate::replicate::raft::replicator::{Cluster, ClusterError};
use crate::storage::create_dir_durable;
use crate::storage::os::OsStorage;
use crate::test_hooks::TestHooks;
use facade::groups::ShareGroups;
use futures_util::future::join_all;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The replicator a data directory belongs to (storage.md): one node's,
/// or a cluster's.
pub const LOCAL_REPLICATOR: &str = "local";
pub const RAFT_REPLICATOR: &str = "openraft";

/// What the front ends share.
pub struct Node {
    pub settings: Settings,
    /// `LOCAL_REPLICATOR` or `RAFT_REPLICATOR`.
    pub replicator_name: &'static str,
    /// The node's raft groups, group 0 first (`group_core.rs`).
    groups: Vec<GroupCore>,
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
    /// The node's monotonic clock: the qlog writer's seal age and reclaim's
    /// pass budget are measured on it.
    pub clock: Arc<dyn Clock>,
    /// The Kafka listener's share group members (KIP-932 keeps them in the
    /// coordinator's memory), set once the listener starts, so that the
    /// HTTP consumer-group view can show who holds a share group's records.
    pub kafka_share_members: OnceLock<Arc<ShareGroups>>,
    /// The router of the raft port the groups share, when there are several.
    _raft_port: Option<RaftPort>,
    /// This process's hold on the data directory, for as long as it runs.
    _dir_lock: DataDirLock,
}

/// `groups`, each once, in the order first met.
pub fn distinct<'n>(groups: impl IntoIterator<Item = &'n GroupCore>) -> Vec<&'n GroupCore> {
    let mut once: Vec<&GroupCore> = Vec::new();
    for group in groups {
        if !once.iter().any(|g| std::ptr::eq(*g, group)) {
            once.push(group);
        }
    }
    once
}

/// Where group `g` keeps its store, qlog and raft state: group 0 in the
/// data directory itself, each further group under `groups/g<g>/`
/// (storage.md, "The data directory").
pub fn group_dir(data_dir: &Path, g: u32) -> PathBuf {
    match g {
        0 => data_dir.to_path_buf(),
        g => data_dir.join("groups").join(format!("g{g}")),
    }
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
        let ledger = match &hooks.sync_ledger {
            Some(p) => Some(Arc::new(SyncLedger::open(p).map_err(|source| BootError::Io { path: p.clone(), source })?)),
            None => None,
        };
        let open_files = fd_limit::open_files(settings.qlog_open_files, fd_limit::raise_to_hard());
        tracing::info!(open_files, "qlog files kept open at most (QUEEN_QLOG_OPEN_FILES)");
        let metrics = Arc::new(Metrics::default());
        let clock = SystemClock::shared();
        let apply_watch = Arc::new(ApplyWatch::default());
        // A cluster's groups share the raft port (`port.rs`).
        let (raft_port, shares): (_, Vec<Option<PortShare>>) = match &cluster {
            Some(c) => {
                let (router, shares) =
                    port::bind(c.listen, c.groups).map_err(|source| ClusterError::Bind { addr: c.listen, source })?;
                (router, shares.into_iter().map(Some).collect())
            }
            None => (None, vec![None]),
        };
        let mut groups = Vec::with_capacity(shares.len());
        // The node's qlog descriptors are shared out among its groups.
        let open_files = (open_files / shares.len()).max(1);
        for (g, port) in shares.into_iter().enumerate() {
            let dir = group_dir(dir, g as u32);
            create_dir_durable(&OsStorage, &dir).map_err(|source| BootError::Io { path: dir.clone(), source })?;
            let cluster = cluster.clone().map(|c| Cluster { group: g as u32, data_dir: dir.clone(), ..c });
            groups.push(GroupCore::boot(GroupBoot {
                settings: &settings,
                dir,
                cluster,
                replicator_name,
                hooks: &hooks,
                ledger: ledger.clone(),
                cipher: cipher.clone(),
                // `/metrics` counts every group's work; its applied index
                // is group 0's.
                metrics: if g == 0 { metrics.clone() } else { Arc::new(metrics.for_another_group()) },
                clock: clock.clone(),
                apply_watch: apply_watch.clone(),
                open_files,
                port,
            })?);
        }
        let group0 = &groups[0];
        // Placement reads queues only in the data groups (`placement.rs`).
        let queues_in_group0 = group0.state.read().expect("store lock").queues.len();
        if groups.len() > 1 && queues_in_group0 > 0 {
            return Err(BootError::QueuesInGroup0(queues_in_group0));
        }
        let ephemeral = Ephemeral::default();
        let prefix = format!("{EPHEMERAL_DECLARATIONS}\0");
        let store = group0.state.read().expect("store lock");
        for (key, row) in store.kv.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)) {
            let given = serde_json::from_str::<serde_json::Value>(&row.value).ok();
            let options =
                given.as_ref().and_then(|v| v.as_object()).and_then(|m| EphOptions::parse(m).ok()).unwrap_or_default();
            ephemeral.declare(&key[prefix.len()..], options);
        }
        drop(store);
        Ok(Self {
            settings,
            replicator_name,
            groups,
            _raft_port: raft_port,
            metrics,
            apply_watch,
            auth,
            ephemeral,
            disk_gate,
            cipher,
            started_us: chrono::Utc::now().timestamp_micros(),
            clock,
            kafka_share_members: OnceLock::new(),
            _dir_lock: dir_lock,
        })
    }

    /// Group 0: KV, locks, ephemeral declarations, membership and the
    /// Kafka coordinators' state, and with one group every queue too.
    pub fn group0(&self) -> &GroupCore {
        &self.groups[0]
    }

    /// Every group of this node, group 0 first.
    pub fn groups(&self) -> &[GroupCore] {
        &self.groups
    }

    /// The group that holds the queue `name` (`placement.rs`).
    pub fn group_of(&self, queue: &str) -> &GroupCore {
        &self.groups[placement::group_of_queue(queue, self.groups.len() as u32) as usize]
    }

    /// The group that holds the queue numbered `queue`.
    pub fn group_of_id(&self, queue: u64) -> &GroupCore {
        &self.groups[placement::group_of_id(queue, self.groups.len() as u32) as usize]
    }

    /// The group whose entry derived `id`, a lease or streams query id
    /// (`LogId::derived_uuid_in`); group 0 for one no group derived.
    pub fn group_of_derived(&self, id: &str) -> &GroupCore {
        let g = crate::log_id::derived_group(id).unwrap_or(0) as usize;
        self.groups.get(g).unwrap_or(&self.groups[0])
    }

    /// The groups that hold queues: group 0 alone with one group, every
    /// other group with several. What lists every queue asks each of them.
    pub fn queue_groups(&self) -> &[GroupCore] {
        match self.groups.len() {
            1 => &self.groups,
            _ => &self.groups[1..],
        }
    }

    /// The groups that hold `queues`, each once.
    pub fn groups_of<'q>(&self, queues: impl IntoIterator<Item = &'q str>) -> Vec<&GroupCore> {
        distinct(queues.into_iter().map(|queue| self.group_of(queue)))
    }

    /// The group of `queue`, or every group that holds queues when none is
    /// named: where a call about one queue or all of them goes.
    pub fn groups_for(&self, queue: Option<&str>) -> &[GroupCore] {
        match queue {
            Some(queue) => std::slice::from_ref(self.group_of(queue)),
            None => self.queue_groups(),
        }
    }

    /// `items` shared out by the group `group_of` names for each, each with
    /// its place in `items`, in the order they came: one part with one
    /// group, so a call about one queue stays one call.
    pub fn split<'n, T>(
        &'n self,
        items: Vec<T>,
        group_of: impl Fn(&'n Self, &T) -> &'n GroupCore,
    ) -> Vec<(&'n GroupCore, Vec<(usize, T)>)> {
        let mut parts: Vec<(&GroupCore, Vec<(usize, T)>)> = Vec::new();
        for (at, item) in items.into_iter().enumerate() {
            let group = group_of(self, &item);
            match parts.iter_mut().find(|(g, _)| std::ptr::eq(*g, group)) {
                Some((_, part)) => part.push((at, item)),
                None => parts.push((group, vec![(at, item)])),
            }
        }
        parts
    }

    /// Asks each group its part of `items` (`split`), all at once, and
    /// answers each item in the order they came; the first error any
    /// group answers is the answer (what other groups stored stays
    /// stored, and a retry finds it by its ids).
    pub async fn ask_split<'n, T, A, E, Fut>(
        &'n self,
        items: Vec<T>,
        group_of: impl Fn(&'n Self, &T) -> &'n GroupCore,
        ask: impl Fn(&'n GroupCore, Vec<T>) -> Fut,
    ) -> Result<Vec<A>, E>
    where
        Fut: Future<Output = Result<Vec<A>, E>>,
    {
        // One group: one call as it is, nothing to share out or sort back.
        if let [only] = self.groups.as_slice() {
            return ask(only, items).await;
        }
        let asked = self.split(items, group_of).into_iter().map(|(group, part)| {
            let (at, items): (Vec<usize>, Vec<T>) = part.into_iter().unzip();
            let answer = ask(group, items);
            async move { (at, answer.await) }
        });
        let mut placed = Vec::new();
        for (at, answer) in join_all(asked).await {
            let answers = answer?;
            assert_eq!(
                at.len(),
                answers.len(),
                "a group answered {} items of the {} it was asked",
                answers.len(),
                at.len()
            );
            placed.extend(at.into_iter().zip(answers));
        }
        placed.sort_by_key(|(at, _)| *at);
        Ok(placed.into_iter().map(|(_, a)| a).collect())
    }

    /// Whether queues live apart from group 0, so that a call about several
    /// queues may reach several groups.
    pub fn placed_apart(&self) -> bool {
        self.groups.len() > 1
    }

    /// Stops every group's replicator: each hands over the leadership it
    /// holds, finishes what it has in flight and stops.
    pub fn stop(&self) {
        for group in &self.groups {
            group.replicator.stop();
        }
    }

    /// Seals the messages of one request for the queues configured with
    /// encryptionEnabled.
    pub fn sealer(&self) -> Sealer<'_> {
        Sealer::new(|queue| &self.group_of(queue).view, self.cipher.as_deref())
    }
}
