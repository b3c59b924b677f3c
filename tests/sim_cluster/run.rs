//! One simulated cluster run from one seed: N nodes booted on simulated
//! storage, founded by node 1, and then, step by step as the seed draws
//! them, clients' commands, crashes (a kill, a power cut, a torn power
//! cut) and restarts, graceful stops (a leader hands its leadership over
//! first, as on SIGTERM), storage faults, partitions and one-way cuts that
//! heal, network weather (loss, delays, slow ways), leadership transfers and
//! membership changes through the membership API (a voter removed, added
//! back as a learner, promoted). A node away past the purge hold is sent a
//! snapshot, exits to install it, and is booted again at once. At the end the network heals, every node
//! restarts and is a voter again, the cluster settles, and every node is
//! checked (`checks.rs`); the ledger's and the clients' checks run at every
//! step.

use super::checks;
use super::ledger::Ledger;
use super::network::Net;
use super::network::{address, NetCounts, Weather};
use super::node::{boot, group_store_dir, trace, Up};
use super::storage::{Crash, Faults, SimStorage};
use super::workload::{Clients, Directory};
use openraft::async_runtime::watch::WatchReceiver;
use openraft::ServerState;
use queen::seams::placement::group_of_queue;
use queen::seams::raft::MembershipChange;
use queen::seams::replicate::Replicator;
use queen::seams::store::Member;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How a run is shaped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    pub steps: usize,
    /// Per step, in parts per thousand.
    pub crash_ppt: u32,
    pub partition_ppt: u32,
    pub faults_ppt: u32,
    /// Answers without an entry wait for a read index (`read_confirm.rs`);
    /// off only to show that the checks catch the bug it fixed.
    pub confirm_reads: bool,
    /// The raft groups each node runs (`QUEEN_RAFT_GROUPS`), all over the
    /// same ports.
    pub groups: u32,
    /// With several groups: the clients' pushes, pops and acks go to the
    /// group that holds their queue, as a node sends them, and KV calls to
    /// group 0 (Kafka transactions and share groups, refused by a node
    /// with its groups apart, are not sent). Otherwise every call goes to
    /// group 0 and the other groups carry none.
    pub placed: bool,
}

impl Plan {
    /// The test that runs this plan's seeds, for the line that replays one.
    pub fn test_name(&self) -> &'static str {
        match *self {
            p if p == Plan::default() => "seeds",
            p if p == Plan::partitions() => "partition_seeds",
            p if p == Plan::groups() => "group_seeds",
            p if p == Plan::placed() => "placed_seeds",
            _ => "reads_without_a_read_index_are_caught",
        }
    }

    /// Partitions more often and crashes seldom: the faults under which a
    /// leader cut off from its majority still believes it leads.
    pub fn partitions() -> Self {
        Plan { crash_ppt: 2, partition_ppt: 25, ..Plan::default() }
    }

    /// Three raft groups on every node: their leaders spread (the
    /// balancer), and each group must stay one log through the faults.
    pub fn groups() -> Self {
        Plan { groups: 3, ..Plan::default() }
    }

    /// Three raft groups on every node, the clients' queues placed in
    /// groups 1 and 2 as a node places them (`src/placement.rs`).
    pub fn placed() -> Self {
        Plan { placed: true, ..Plan::groups() }
    }
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            steps: 400,
            crash_ppt: 8,
            partition_ppt: 10,
            faults_ppt: 4,
            confirm_reads: true,
            groups: 1,
            placed: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub nodes: usize,
    pub commands: u64,
    pub unknown_outcomes: u64,
    pub pushes_answered: u64,
    /// Records of Kafka transactions known committed, and known aborted.
    pub txn_records_committed: u64,
    pub txn_records_aborted: u64,
    /// Messages pops delivered, and completions answered.
    pub pops_delivered: u64,
    pub completions: u64,
    /// Records the share group's members acquired, and acknowledgements
    /// that applied.
    pub share_deliveries: u64,
    pub share_acks: u64,
    /// KV operations in the linearizability check, and those without an answer.
    pub kv_ops: u64,
    pub kv_unanswered: u64,
    pub entries_answered: u64,
    pub committed: u64,
    pub crashes: u64,
    pub stops_on_faults: u64,
    /// Snapshots a node received, staged and installed at its next boot.
    pub snapshots_installed: u64,
    pub partitions: u64,
    pub transfers: u64,
    /// Graceful stops, and those of a leader whose leadership moved.
    pub stops: u64,
    pub handed_over: u64,
    /// Membership changes asked, and those made.
    pub membership_asked: u64,
    pub membership_made: Arc<AtomicU64>,
    pub terms: u64,
    pub terms_with_two_leaders: u64,
    /// Entries the groups past 0 committed, and terms they went through.
    pub other_groups_committed: u64,
    pub other_groups_terms: u64,
    pub simulated_ms: u64,
    pub net: NetCounts,
    /// What the run committed, for telling two runs of a seed apart.
    pub fingerprint: u64,
    /// The hash of the run's trace: every call's fate and every client's
    /// answer, each at its time (`node::record`).
    pub trace: u64,
}

pub struct Run {
    seed: u64,
    rng: StdRng,
    plan: Plan,
    ids: Vec<u64>,
    storages: BTreeMap<u64, SimStorage>,
    /// Each node's store checkpoint directory: LMDB, on a real temporary
    /// directory (outside the storage seam; its commits are whole or
    /// absent, and a node checkpoints only what its log holds durably, so a
    /// crash leaves a checkpoint its log can replay after). Each boot takes
    /// a copy of the last one's in a directory of its own: heed opens a
    /// file once per process, and what is left of a killed node's tasks
    /// (its apply waits on an fdatasync that never comes) holds it open.
    store_dirs: BTreeMap<u64, PathBuf>,
    /// Boots so far, which name those directories.
    boots: u64,
    ups: BTreeMap<u64, Up>,
    net: Net,
    /// Group 0's ledger, then each further group's.
    ledgers: Vec<Ledger>,
    clients: Clients,
    directory: Directory,
    /// The node whose storage fails now, and until which step.
    faulty: Option<(u64, usize)>,
    /// When the network was last cut: it heals no sooner than
    /// `PARTITION_HOLDS` after, so that the side with a majority can elect
    /// a leader and commit while the other still believes in the old one.
    cut_at: Option<Instant>,
    epoch: Instant,
    outcome: Outcome,
    /// Where the checkpoints live, removed after the run.
    lmdb: tempfile::TempDir,
}

const CRASHES: [Crash; 3] = [Crash::Kill, Crash::PowerCut, Crash::TornPowerCut];
/// The least time a cut lasts: a few election timeouts (500-1000 ms).
const PARTITION_HOLDS: Duration = Duration::from_millis(2500);
/// How long the cluster may take to settle once everything heals.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);

impl Run {
    pub fn new(seed: u64, plan: Plan) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x0c10_57e4);
        let n = if rng.gen_ratio(1, 4) { 5 } else { 3 };
        let ids: Vec<u64> = (1..=n).collect();
        let storages =
            ids.iter().map(|id| (*id, SimStorage::new(seed.wrapping_mul(31) + id, &[Path::new("/node")]))).collect();
        let lmdb = tempfile::tempdir().expect("a temporary directory");
        let net = Net::new(StdRng::from_rng(&mut rng).expect("a seeded rng"));
        let directory = Directory::default();
        super::node::EPOCH.with(|e| e.set(Some(Instant::now())));
        super::node::TRACE.with(|t| t.set(0));
        Run {
            seed,
            rng,
            plan,
            ids,
            storages,
            store_dirs: BTreeMap::new(),
            boots: 0,
            lmdb,
            ups: BTreeMap::new(),
            net,
            ledgers: (0..plan.groups).map(|_| Ledger::default()).collect(),
            clients: Clients::new(directory.clone(), plan.placed.then_some(plan.groups)),
            directory,
            faulty: None,
            cut_at: None,
            epoch: Instant::now(),
            outcome: Outcome { nodes: n as usize, ..Outcome::default() },
        }
    }

    fn violation(&self, what: &str) -> ! {
        panic!("seed {}: invariant violated: {what}", self.seed)
    }

    pub async fn go(mut self) -> Outcome {
        for id in self.ids.clone() {
            self.start(id).await;
        }
        for step in 0..self.plan.steps {
            let pause = self.rng.gen_range(1..40);
            tokio::time::sleep(Duration::from_millis(pause)).await;
            self.act(step).await;
            self.check_running(step % 20 == 0);
        }
        self.heal_everything().await;
        self.settle().await;
        self.finish().await
    }

    /// One step's action, drawn from the seed.
    async fn act(&mut self, step: usize) {
        if let Some((id, until)) = self.faulty {
            if step >= until {
                self.faulty = None;
                let struck = self.storages[&id].counts();
                self.storages[&id].arm(Faults::default());
                if struck.write_eio + struck.write_enospc + struck.sync_eio > 0 && self.ups.contains_key(&id) {
                    // A failed write or fdatasync stops a node (the syncer's
                    // FATAL line; openraft stops on a failed vote write).
                    self.outcome.stops_on_faults += 1;
                    self.crash(id);
                }
            }
        }
        for id in self.ids.clone() {
            if self.ups.get(&id).is_some_and(|up| up.stopped.load(std::sync::atomic::Ordering::Acquire)) {
                self.outcome.stops_on_faults += 1;
                self.crash(id);
            }
        }
        self.restart_exited().await;
        let roll = self.rng.gen_range(0..1000);
        let (crash, partition, faults) = (self.plan.crash_ppt, self.plan.partition_ppt, self.plan.faults_ppt);
        if roll < crash {
            let up: Vec<u64> = self.ups.keys().copied().collect();
            if let Some(id) = up.choose(&mut self.rng) {
                self.crash(*id);
            }
        } else if roll < crash * 3 / 2 {
            let up: Vec<u64> = self.ups.keys().copied().collect();
            if let Some(id) = up.choose(&mut self.rng) {
                self.stop(*id).await;
            }
        } else if roll < crash * 3 {
            let down: Vec<u64> = self.ids.iter().copied().filter(|id| !self.ups.contains_key(id)).collect();
            if let Some(id) = down.choose(&mut self.rng) {
                self.start(*id).await;
            }
        } else if roll < crash * 3 + partition {
            self.partition();
        } else if roll < crash * 3 + partition * 3 {
            if self.cut_at.is_none_or(|at| at.elapsed() >= PARTITION_HOLDS) {
                trace(|| "the network heals".into());
                self.net.heal();
                self.cut_at = None;
            }
        } else if roll < crash * 3 + partition * 3 + faults {
            let up: Vec<u64> = self.ups.keys().copied().collect();
            if let (None, Some(id)) = (self.faulty, up.choose(&mut self.rng)) {
                let until = step + self.rng.gen_range(1..6);
                trace(|| format!("node {id}'s storage fails now and then until step {until}"));
                self.storages[id].arm(Faults { write_fails_ppm: 50_000, sync_fails_ppm: 50_000, read_flips_ppm: 0 });
                self.faulty = Some((*id, until));
            }
        } else if roll < crash * 3 + partition * 3 + faults + 10 {
            self.transfer().await;
        } else if roll < crash * 3 + partition * 3 + faults + 14 {
            self.change_membership();
        } else if roll < crash * 3 + partition * 3 + faults + 30 {
            let weather = Weather {
                loss_ppm: *[0, 0, 10_000, 50_000].choose(&mut self.rng).unwrap(),
                delay_us: *[500, 2_000, 10_000, 50_000].choose(&mut self.rng).unwrap(),
                slow_ppm: *[0, 0, 5_000, 20_000].choose(&mut self.rng).unwrap(),
            };
            trace(|| format!("the network's weather: {weather:?}"));
            self.net.set_weather(weather);
        } else {
            // A client sends a command to a node it picks: one that is up,
            // or now and then one that is down.
            let to = *self.ids.choose(&mut self.rng).unwrap();
            self.outcome.commands += 1;
            self.clients.send(&mut self.rng, to);
        }
    }

    async fn start(&mut self, id: u64) {
        let dir = self.lmdb.path().join(format!("boot{}", self.boots));
        self.boots += 1;
        std::fs::create_dir_all(&dir).expect("a checkpoint directory");
        if let Some(last) = self.store_dirs.insert(id, dir.clone()) {
            for g in 0..self.plan.groups {
                let (from, to) = (group_store_dir(&last, g), group_store_dir(&dir, g));
                if from.join("data.mdb").exists() {
                    std::fs::create_dir_all(&to).expect("a group's checkpoint directory");
                    std::fs::copy(from.join("data.mdb"), to.join("data.mdb")).expect("a copy of the checkpoint");
                }
            }
        }
        let rng = StdRng::from_rng(&mut self.rng).expect("a seeded rng");
        let net = self.net.clone();
        let node = (id, self.ids.as_slice());
        let disk = (&self.storages[&id], dir.as_path());
        let booted = boot(node, disk, (net, &self.ledgers), rng, self.epoch, self.plan.confirm_reads).await;
        match booted {
            Ok(up) => {
                trace(|| format!("node {id} boots: applied through {}", up.store.read().unwrap().applied));
                let replicators = std::iter::once(&up).chain(&up.others).map(|g| g.replicator.clone()).collect();
                self.directory.lock().expect("directory lock").insert(id, replicators);
                self.clients.stores.lock().expect("stores lock").insert(id, up.store.clone());
                self.ups.insert(id, up);
            }
            Err(e) => self.violation(&format!("node {id} refused to boot: {e}")),
        }
    }

    fn crash(&mut self, id: u64) {
        let Some(up) = self.ups.remove(&id) else { return };
        let crash = *CRASHES.choose(&mut self.rng).unwrap();
        trace(|| format!("node {id}: {crash:?}"));
        self.outcome.crashes += 1;
        self.unlist(id);
        self.gone(id, up);
        self.storages[&id].crash(crash);
    }

    /// Boots again every node whose process exited to install the snapshot
    /// it staged, as its supervisor does on exit code 75.
    async fn restart_exited(&mut self) {
        for id in self.ids.clone() {
            if !self.ups.get(&id).is_some_and(|up| up.exited.load(Ordering::Acquire)) {
                continue;
            }
            let up = self.ups.remove(&id).expect("up");
            trace(|| format!("node {id} exits with code 75 to install the snapshot it staged"));
            self.outcome.snapshots_installed += 1;
            self.unlist(id);
            self.gone(id, up);
            self.start(id).await;
        }
    }

    /// Node `id` takes no more client commands.
    fn unlist(&self, id: u64) {
        self.directory.lock().expect("directory lock").remove(&id);
        self.clients.stores.lock().expect("stores lock").remove(&id);
    }

    /// Node `id`'s process is gone: the network forgets it, its tasks end,
    /// and its storage's faults end with it (seed 171 booted a stopped node
    /// again into them).
    fn gone(&mut self, id: u64, up: Up) {
        self.net.down(id);
        up.kill();
        if self.faulty.is_some_and(|(f, _)| f == id) {
            self.faulty = None;
            self.storages[&id].arm(Faults::default());
        }
    }

    /// Stops node `id` as SIGTERM does: a leader hands its leadership to
    /// the voter holding most of its log, the proposer finishes, openraft
    /// stops, and what was staged is written; then the process is gone.
    async fn stop(&mut self, id: u64) {
        let Some(up) = self.ups.remove(&id) else { return };
        let led = up.raft().metrics().borrow_watched().current_leader == Some(id);
        trace(|| format!("node {id} stops{}", if led { ", handing its leadership over" } else { "" }));
        self.outcome.stops += 1;
        self.unlist(id);
        up.replicator.shut_down().await;
        for other in &up.others {
            other.replicator.shut_down().await;
        }
        let moved = self.ups.values().find_map(|other| other.raft().metrics().borrow_watched().current_leader);
        if led && moved.is_some_and(|leader| leader != id) {
            self.outcome.handed_over += 1;
        }
        while up.log.sync_staged().unwrap_or(false) {}
        self.gone(id, up);
    }

    /// Asks a node the seed picks for a membership change, through the
    /// membership API's path (forwarded to the leader, checked, then made
    /// by openraft): all voters lose one; a node that is no member comes
    /// back as a learner; learners are promoted.
    fn change_membership(&mut self) {
        let Some(leader) = self.leader() else { return };
        let change = self.membership_step(leader, true);
        let up: Vec<u64> = self.ups.keys().copied().collect();
        let (Some(change), Some(via)) = (change, up.choose(&mut self.rng).copied()) else { return };
        self.outcome.membership_asked += 1;
        self.ask_membership(via, change);
    }

    /// The next membership change from what leader `leader` holds: a voter
    /// removed (when `remove` and every node is one), a learner added, or
    /// the learners promoted.
    fn membership_step(&mut self, leader: u64, remove: bool) -> Option<MembershipChange> {
        let (voters, learners) = {
            let m = self.ups[&leader].raft().metrics().borrow_watched().clone();
            let membership = m.membership_config.membership();
            let voters: Vec<u64> = membership.voter_ids().collect();
            (voters, membership.learner_ids().collect::<Vec<u64>>())
        };
        let absent: Vec<u64> =
            self.ids.iter().copied().filter(|id| !voters.contains(id) && !learners.contains(id)).collect();
        if !learners.is_empty() {
            Some(MembershipChange::Promote { ids: learners })
        } else if let Some(id) = absent.choose(&mut self.rng) {
            Some(MembershipChange::AddLearner { id: *id, member: Member { raft: address(*id), ..Member::default() } })
        } else if remove && voters.len() == self.ids.len() {
            voters.choose(&mut self.rng).map(|id| MembershipChange::Remove { id: *id })
        } else {
            None
        }
    }

    /// Sends `change` through node `via`'s replicator, answered in a task
    /// of its own.
    fn ask_membership(&self, via: u64, change: MembershipChange) {
        let replicator = self.ups[&via].replicator.clone();
        let made = self.outcome.membership_made.clone();
        tokio::spawn(async move {
            let answer = match replicator.change_membership(change.clone()) {
                Some(answer) => answer.await,
                None => return,
            };
            if answer.is_ok() {
                made.fetch_add(1, Ordering::Relaxed);
            }
            trace(|| format!("membership change {change:?} through node {via}: {answer:?}"));
        });
    }

    /// Cuts the network: the leader (or a node) off from the rest, two
    /// sides at random, or one way of one link.
    fn partition(&mut self) {
        self.outcome.partitions += 1;
        self.cut_at.get_or_insert_with(Instant::now);
        let mut ids = self.ids.clone();
        ids.shuffle(&mut self.rng);
        match self.rng.gen_range(0..3) {
            0 => {
                let alone = self.leader().unwrap_or(ids[0]);
                trace(|| format!("node {alone} is cut off"));
                for other in self.ids.iter().filter(|o| **o != alone) {
                    self.net.cut(alone, *other);
                    self.net.cut(*other, alone);
                }
            }
            1 => {
                let split = self.rng.gen_range(1..ids.len());
                let (a, b) = ids.split_at(split);
                trace(|| format!("the network splits into {a:?} and {b:?}"));
                for x in a {
                    for y in b {
                        self.net.cut(*x, *y);
                        self.net.cut(*y, *x);
                    }
                }
            }
            _ => {
                trace(|| format!("the link from {} to {} carries nothing", ids[0], ids[1]));
                self.net.cut(ids[0], ids[1]);
            }
        }
    }

    /// The node that is leader by its own metrics, if one is up.
    fn leader(&self) -> Option<u64> {
        self.ups
            .iter()
            .filter(|(_, up)| up.raft().metrics().borrow_watched().state == ServerState::Leader)
            .map(|(id, up)| (up.raft().metrics().borrow_watched().current_term, *id))
            .max()
            .map(|(_, id)| id)
    }

    async fn transfer(&mut self) {
        let Some(leader) = self.leader() else { return };
        let others: Vec<u64> = self.ids.iter().copied().filter(|id| *id != leader).collect();
        let to = *others.choose(&mut self.rng).unwrap();
        trace(|| format!("node {leader} hands its leadership to {to}"));
        self.outcome.transfers += 1;
        let _ = self.ups[&leader].raft().trigger().transfer_leader(to).await;
    }

    /// The checks that hold at every step: no task panicked, the ledger's
    /// and the answers'.
    fn check_running(&self, stores: bool) {
        if let Some(p) = super::PANICS.with(|p| p.borrow().first().cloned()) {
            self.violation(&format!("a task panicked: {p}"));
        }
        for (g, ledger) in self.ledgers.iter().enumerate() {
            if let Some(v) = ledger.violations().first() {
                self.violation(&format!("group {g}: {v}"));
            }
        }
        if let Some(v) = self.clients.model.lock().expect("model lock").violations.first() {
            self.violation(v);
        }
        if stores {
            let ups = self.ups.iter().map(|(id, up)| (*id, up)).collect();
            if let Some(v) = checks::equal_stores(&ups).first() {
                self.violation(v);
            }
        }
    }

    async fn heal_everything(&mut self) {
        trace(|| "everything heals".into());
        self.net.heal();
        self.net.set_weather(Weather::default());
        if let Some((id, _)) = self.faulty.take() {
            self.storages[&id].arm(Faults::default());
            if self.ups.contains_key(&id) {
                self.crash(id);
            }
        }
        for id in self.ids.clone() {
            if self.ups.get(&id).is_some_and(|up| up.stopped.load(std::sync::atomic::Ordering::Acquire)) {
                self.crash(id);
            }
            if !self.ups.contains_key(&id) {
                self.start(id).await;
            }
        }
    }

    /// Waits until one node leads, every node has applied its whole log,
    /// and the clients have their answers.
    async fn settle(&mut self) {
        let deadline = Instant::now() + SETTLE_WITHIN;
        let mut next_change = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.restart_exited().await;
            self.check_running(false);
            // Every node is made a voter again, a step at a time.
            if let Some(leader) = self.leader().filter(|_| Instant::now() >= next_change) {
                if let Some(change) = self.membership_step(leader, false) {
                    self.ask_membership(leader, change);
                }
                next_change = Instant::now() + Duration::from_millis(500);
            }
            let settled = self.leader().is_some_and(|leader| {
                let m = self.ups[&leader].raft().metrics().borrow_watched().clone();
                let voters = m.membership_config.membership().voter_ids().count();
                let last = m.last_log_index;
                voters == self.ids.len()
                    && self.ups.values().all(|up| {
                        let m = up.raft().metrics().borrow_watched().clone();
                        m.last_applied.map(|a| a.index) == last && m.last_log_index == last
                    })
            });
            let answered = self.clients.model.lock().expect("model lock").answers == self.outcome.commands;
            if settled && answered && (1..self.plan.groups as usize).all(|g| self.group_settled(g)) {
                return;
            }
            if Instant::now() >= deadline {
                let states: Vec<String> = self
                    .ups
                    .iter()
                    .map(|(id, up)| {
                        let m = up.raft().metrics().borrow_watched().clone();
                        format!(
                            "node {id} {:?} term {} log {:?} applied {:?} {:?}",
                            m.state, m.current_term, m.last_log_index, m.last_applied, m.running_state
                        )
                    })
                    .collect();
                self.violation(&format!("the healed cluster did not settle within {SETTLE_WITHIN:?}: {states:?}"));
            }
        }
    }

    /// Group `g` (above 0) has a leader that every node follows, and every
    /// node has applied its whole log.
    fn group_settled(&self, g: usize) -> bool {
        let metrics: Vec<_> =
            self.ups.values().map(|up| up.others[g - 1].raft().metrics().borrow_watched().clone()).collect();
        let Some(leader) = metrics.iter().find(|m| m.state == ServerState::Leader) else { return false };
        let last = leader.last_log_index;
        metrics.iter().all(|m| {
            m.current_leader == Some(leader.id) && m.last_applied.map(|a| a.index) == last && m.last_log_index == last
        })
    }

    async fn finish(mut self) -> Outcome {
        let committed = self.ledgers[0].committed();
        // A settled node has written what it staged. Until then a leader
        // may have applied entries whose records are not in its files yet
        // (openraft commits on its followers' flushes): a read of such a
        // record fails (seed 1, docs/architecture.md).
        for (id, up) in &self.ups {
            while up.log.sync_staged().unwrap_or_else(|e| self.violation(&format!("node {id} could not sync: {e}"))) {}
        }
        // Each group's log on each node holds what the group committed.
        let groups = self.plan.groups as usize;
        for g in 0..groups {
            let committed = self.ledgers[g].committed();
            let last = committed.keys().next_back().copied();
            for (id, up) in &self.ups {
                let up = if g == 0 { up } else { &up.others[g - 1] };
                let held = checks::held(up, last).await;
                if let Some(v) = checks::log(*id, held, &committed).first() {
                    self.violation(&format!("group {g}: {v}"));
                }
            }
        }
        let model = self.clients.model.clone();
        let model = model.lock().expect("model lock");
        let placed = |queue: &str| match self.plan.placed {
            true => group_of_queue(queue, self.plan.groups) as usize,
            false => 0,
        };
        for (id, up) in &self.ups {
            let all: Vec<&Up> = std::iter::once(up).chain(&up.others).collect();
            if let Some(v) = checks::data(*id, &all, placed, &model).first() {
                self.violation(v);
            }
        }
        for g in 0..groups {
            let ups = self.ups.iter().map(|(id, up)| (*id, if g == 0 { up } else { &up.others[g - 1] })).collect();
            if let Some(v) = checks::equal_stores(&ups).first() {
                self.violation(&format!("group {g}: {v}"));
            }
        }
        // Each settled node's KV rows end the KV history, read after every call.
        let rows: Vec<_> = self.ups.values().map(checks::kv_rows).collect();
        let mut holds: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        for key in rows.iter().flat_map(|r| r.keys()).chain(model.kv.keys()) {
            holds.insert(key.clone(), rows.iter().map(|r| r.get(key).cloned()).collect());
        }
        if let Some(v) = model.kv.check(&holds).first() {
            self.violation(v);
        }
        let (kv_ops, kv_open) = model.kv.counts();
        let (terms, two) = self.ledgers[0].terms();
        let o = &mut self.outcome;
        o.unknown_outcomes = model.unknown_outcomes;
        o.kv_ops = kv_ops as u64;
        o.kv_unanswered = kv_open as u64;
        o.pushes_answered = model.acked.len() as u64;
        o.txn_records_committed = model.txns.committed.len() as u64;
        o.txn_records_aborted = model.txns.aborted.len() as u64;
        o.pops_delivered = model.pops.delivered;
        o.completions = model.pops.completions;
        o.share_deliveries = model.shares.acquired;
        o.share_acks = model.shares.acknowledged;
        o.entries_answered = self.ledgers[0].answered_count() as u64;
        o.committed = committed.len() as u64;
        o.terms = terms as u64;
        for ledger in &self.ledgers[1..] {
            o.other_groups_committed += ledger.committed().len() as u64;
            o.other_groups_terms += ledger.terms().0 as u64;
        }
        o.terms_with_two_leaders = two as u64;
        o.simulated_ms = self.epoch.elapsed().as_millis() as u64;
        o.net = self.net.counts();
        o.fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            format!("{committed:?} {:?} {}", model.acked, o.simulated_ms).hash(&mut h);
            h.finish()
        };
        o.trace = super::node::TRACE.with(|t| t.get());
        drop(model);
        for (id, up) in std::mem::take(&mut self.ups) {
            self.gone(id, up);
        }
        self.outcome
    }
}
