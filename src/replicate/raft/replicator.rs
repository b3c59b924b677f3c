//! The cluster's replicator: openraft over the qlog, behind the same trait
//! as the single node's. On the leader a command is planned by the
//! proposer's task; on a follower it is forwarded to the leader over the
//! raft port, and the leader's answer comes back. A read waits at the read
//! gate: the leader confirms its leadership with a quorum (read index), a
//! follower asks the leader for that index and waits until it has applied
//! through it.
//!
//! openraft and the raft port run on a runtime of their own, so the front
//! ends' runtime never carries consensus traffic, and a busy front end
//! never delays a heartbeat.

use super::apply_guard::ApplyGuard;
use super::balancer::{self, TRANSFER_TIMEOUT};
use super::log_storage::RaftLog;
use super::membership::{self, ChangeRefusal, MembershipChange, MembershipView};
use super::network::Peers;
use super::port::PortShare;
use super::proposer::{self, OnAnswered, Seat};
use super::read_confirm::ReadConfirmer;
use super::refound;
use super::rpc::{Hello, Request, Response};
use super::server::{exit_to_install, Changed, Forwarded, ForwardedAt, Leader, Server, StagedExit};
use super::snapshot_transfer::Inbox;
use super::standing::{self, Standing};
use super::state_machine::Machine;
use super::transport::{Listener, Tcp, Transport};
use super::types::{Queen, RaftLogId};
use super::version_gate;
use crate::apply_watch::ApplyWatch;
use crate::clock::Clock;
use crate::planner::command::Command;
use crate::replicate::proposer::Msg;
use crate::replicate::{Admin, Proposal, ProposeError, RaftStatus, ReadGate, Replicator};
use crate::storage::os::OsStorage;
use crate::storage::Storage;
use crate::store::rows::Member;
use crate::store::Store;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Config, Raft, ServerState, SnapshotPolicy};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
// tokio's clock, which a simulated run pauses and steps; a process sees no
// difference.
use tokio::time::Instant;

/// What a cluster node is started with.
#[derive(Clone)]
pub struct Cluster {
    pub me: u64,
    /// Every voter this cluster was founded with, and where it is reached.
    pub peers: BTreeMap<u64, Member>,
    pub token: String,
    /// The raft port to listen on.
    pub listen: SocketAddr,
    /// An empty node waits to be added (`QUEEN_RAFT_JOIN`) instead of
    /// founding the cluster.
    pub join: bool,
    /// How long a write may take before it answers `Timeout`.
    pub write_timeout: Duration,
    /// Where a snapshot sent to this node arrives.
    pub data_dir: PathBuf,
    /// How long applied entries stay in the log (`QUEEN_RAFT_PURGE_HOLD_S`).
    pub purge_hold: Duration,
    /// The effect catalogue version this build reads (`version_gate.rs`).
    pub catalogue: u32,
    /// The raft group this replicator runs, of `groups` (`QUEEN_RAFT_GROUPS`).
    pub group: u32,
    pub groups: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("the raft port {addr} could not be bound: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("openraft did not start: {0}")]
    Start(String),
    #[error("the runtime for raft did not start: {0}")]
    Runtime(std::io::Error),
}

struct Inner<SM: Machine> {
    raft: Raft<Queen, SM>,
    me: u64,
    peers: Peers,
    store: Arc<RwLock<Store>>,
    apply_watch: Arc<ApplyWatch>,
    tx: Mutex<Option<mpsc::UnboundedSender<Msg>>>,
    write_timeout: Duration,
    handle: tokio::runtime::Handle,
    /// When this node last had the leader's view of the membership.
    last_leader_view: Mutex<Instant>,
    /// The voters of QUEEN_RAFT_PEERS.
    founders: BTreeMap<u64, Member>,
    guard: Arc<ApplyGuard>,
    /// The effect catalogue version this build reads.
    catalogue: u32,
    /// The proposer's: set here before a membership change, whose entries
    /// take log slots the planner did not plan for, so that it settles and
    /// leads again after them before it plans on (tests/raft_recovery.rs
    /// found a leader's proposer failing its overlay check after a change
    /// under load had voided entries it had in flight).
    derailed: Arc<AtomicBool>,
    /// Confirms this node's leadership for reads (`read_confirm.rs`).
    reads: Arc<ReadConfirmer<SM>>,
    /// Whether this node is a member, or waits to be added or was removed
    /// (`standing.rs`).
    standing: Arc<Standing>,
}

/// A cluster node's replicator, over Queen's state machine (`RaftMachine`)
/// in a process, or the cluster simulator's wrapper of it.
pub struct RaftReplicator<SM: Machine = super::state_machine::RaftMachine> {
    inner: Arc<Inner<SM>>,
    log: RaftLog,
    proposer: Mutex<Option<JoinHandle<()>>>,
    /// The tasks it runs beside openraft (the raft port's server, the purge
    /// hold, ...), which end with it.
    tasks: Mutex<JoinSet<()>>,
    /// The runtime it runs on, when it made its own (a process's).
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

/// What a node's raft runs on: in a process, TCP, the operating system's
/// files, its own exit and no hooks; in the cluster simulator, its network,
/// its simulated disk and its ledger's hook.
pub struct Ground {
    pub transport: Arc<dyn Transport>,
    /// Where snapshots are read to be sent and written as they arrive.
    pub storage: Arc<dyn Storage>,
    pub listener: Box<dyn Listener>,
    pub on_answered: Option<OnAnswered>,
    /// Answers without an entry wait for a read index (`read_confirm.rs`);
    /// off only in the simulator's deliberately broken variant.
    pub confirm_reads: bool,
    pub staged_exit: StagedExit,
}

/// openraft's settings for a cluster node (the cluster simulator runs
/// with them too).
pub fn config() -> Config {
    Config {
        cluster_name: "queen".into(),
        heartbeat_interval: 100,
        election_timeout_min: 500,
        election_timeout_max: 1000,
        // The purge hold asks for snapshots and purges (`hold_purges`):
        // openraft neither builds nor purges by itself.
        snapshot_policy: SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: u64::MAX,
        install_snapshot_timeout: 10_000,
        max_payload_entries: 256,
        // A restarted leader campaigns in a new term: openraft's leader
        // restore let it lead on in its old term, and a leader sends
        // entries before its own fdatasync, so one that lost them in the
        // crash wrote other entries under the same log ids, and followers
        // holding the first ones kept them (the cluster simulator's seed 14).
        enable_leader_restore: Some(false),
        // A node asks whether it would win before it raises its term. A
        // voter removed while it ran never heard of its removal and
        // campaigned with rising terms; added back, its first answer to the
        // leader carried the higher term and every group's leader stepped
        // down (issue 43). No member grants such a node a pre-vote, so its
        // term stays where it was (`standing.rs`).
        enable_pre_vote: Some(true),
        ..Default::default()
    }
}

impl<SM: Machine> RaftReplicator<SM> {
    /// Starts openraft over `machine` and `log` on a runtime of its own,
    /// with its share of the raft port on TCP; founds the cluster when this
    /// is its lowest-numbered voter and its log is empty.
    pub fn start(
        cluster: Cluster,
        log: RaftLog,
        machine: SM,
        reclaim: ReclaimBound,
        clock: Arc<dyn Clock>,
        port: PortShare,
    ) -> Result<Self, ClusterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("raft-g{}", cluster.group))
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let listen = cluster.listen;
        let listener = {
            let _entered = runtime.enter();
            port.listener().map_err(|source| ClusterError::Bind { addr: listen, source })?
        };
        let ground = Ground {
            transport: Arc::new(Tcp),
            storage: OsStorage::shared(),
            listener,
            on_answered: None,
            confirm_reads: true,
            staged_exit: exit_to_install(),
        };
        let replicator = runtime.block_on(Self::launch(cluster, log, machine, reclaim, clock, ground))?;
        *replicator.runtime.lock().expect("replicator lock") = Some(runtime);
        Ok(replicator)
    }

    /// Starts openraft, the raft port's server over `ground` and the
    /// proposer on the runtime this is called on; founds the cluster as
    /// `start` says.
    pub async fn launch(
        cluster: Cluster,
        log: RaftLog,
        machine: SM,
        reclaim: ReclaimBound,
        clock: Arc<dyn Clock>,
        ground: Ground,
    ) -> Result<Self, ClusterError> {
        let handle = tokio::runtime::Handle::current();
        let queen = machine.queen();
        let (store, apply_watch, guard) = (queen.store.clone(), queen.after.apply_watch.clone(), queen.guard.clone());
        let hello = Hello { token: cluster.token.clone(), from: cluster.me, group: cluster.group };
        let standing = Arc::new(Standing::new(cluster.join));
        let peers = Peers::new(hello, ground.transport, ground.storage.clone(), standing.clone());
        let config = Arc::new(config().validate().map_err(|e| ClusterError::Start(e.to_string()))?);
        let founder = cluster.peers.keys().next() == Some(&cluster.me);
        if founder && !cluster.join {
            let again = refound::found_again_if_cut_short(&log, cluster.me, &cluster.peers)
                .await
                .map_err(|e| ClusterError::Start(format!("writing the founding membership again: {e}")))?;
            if again {
                tracing::warn!(
                    "this founder's first boot was cut short before its membership was durable: written again"
                );
            }
        }
        let raft = Raft::new(cluster.me, config, peers.clone(), log.clone(), machine)
            .await
            .map_err(|e| ClusterError::Start(e.to_string()))?;
        let derailed = Arc::new(AtomicBool::new(false));
        let reads = ReadConfirmer::new(raft.clone(), handle.clone());
        let seat = Seat {
            raft: raft.clone(),
            me: cluster.me,
            store: store.clone(),
            derailed: derailed.clone(),
            reads: ground.confirm_reads.then(|| reads.clone()),
            clock,
            on_answered: ground.on_answered,
            group: cluster.group,
        };
        let (tx, proposer) = proposer::spawn(seat);
        let inner = Arc::new(Inner {
            raft: raft.clone(),
            me: cluster.me,
            peers,
            store,
            apply_watch,
            tx: Mutex::new(Some(tx)),
            write_timeout: cluster.write_timeout,
            handle,
            last_leader_view: Mutex::new(Instant::now()),
            founders: cluster.peers.clone(),
            guard,
            catalogue: cluster.catalogue,
            derailed,
            reads: reads.clone(),
            standing: standing.clone(),
        });
        let server = Arc::new(Server {
            raft: raft.clone(),
            token: cluster.token,
            group: cluster.group,
            leader: inner.clone(),
            inbox: Inbox { storage: ground.storage, data_dir: cluster.data_dir.clone() },
            staged: Default::default(),
            staged_exit: ground.staged_exit,
            catalogue: cluster.catalogue,
            reads,
        });
        let mut tasks = JoinSet::new();
        tasks.spawn(server.serve(ground.listener));
        tasks.spawn(hold_purges(raft.clone(), cluster.purge_hold, reclaim));
        tasks.spawn(stop_when_the_log_fails(raft.clone(), log.clone()));
        tasks.spawn(raise_catalogue(inner.clone()));
        tasks.spawn(standing::campaign_only_as_a_member(raft.clone(), standing, cluster.group));
        if cluster.groups > 1 {
            tasks.spawn(balancer::prefer_leader(raft.clone(), cluster.group));
        }
        if founder && !cluster.join {
            let initialized = raft.is_initialized().await.map_err(|e| ClusterError::Start(e.to_string()))?;
            if !initialized {
                raft.initialize(cluster.peers.clone()).await.map_err(|e| ClusterError::Start(e.to_string()))?;
                tracing::info!(voters = ?cluster.peers.keys().collect::<Vec<_>>(), "founded the cluster");
            }
        } else if cluster.join {
            tracing::info!("this fresh node joins an existing cluster: it waits to be added");
        }
        Ok(Self {
            inner,
            log,
            proposer: Mutex::new(Some(proposer)),
            tasks: Mutex::new(tasks),
            runtime: Mutex::new(None),
        })
    }

    /// openraft, for what the replicator does not answer itself (the
    /// node's status, the simulator's faults and checks).
    pub fn raft(&self) -> &Raft<Queen, SM> {
        &self.inner.raft
    }

    /// Hands leadership over when this node leads, then stops the proposer
    /// (finishing what it has in flight) and openraft.
    pub async fn shut_down(&self) {
        self.inner.hand_over_leadership().await;
        if let Some(tx) = self.inner.tx.lock().expect("replicator lock").take() {
            let _ = tx.send(Msg::Stop);
        }
        let proposer = self.proposer.lock().expect("replicator lock").take();
        if let Some(proposer) = proposer {
            let _ = proposer.await;
        }
        self.tasks.lock().expect("replicator lock").abort_all();
        let _ = self.inner.raft.shutdown().await;
    }

    /// Ends every task this replicator runs at once, as the death of its
    /// process does (the cluster simulator's kill); openraft's own are
    /// ended by its `shutdown`.
    pub fn abort(&self) {
        self.inner.tx.lock().expect("replicator lock").take();
        if let Some(proposer) = self.proposer.lock().expect("replicator lock").take() {
            proposer.abort();
        }
        self.tasks.lock().expect("replicator lock").abort_all();
    }
}

/// Stops openraft once this node's log cannot be written (a full volume):
/// the node must not vote or take appends it cannot make durable, and the
/// others go on without it. Its process stays up, saying why in /health.
async fn stop_when_the_log_fails<SM: Machine>(raft: Raft<Queen, SM>, log: RaftLog) {
    while log.failure().is_none() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = raft.shutdown().await;
}

/// Raises the cluster's effect catalogue version once every member reads a
/// newer one (`version_gate.rs`): the leader asks each member what its
/// build reads, every few seconds, and writes the lowest answer when it is
/// above the cluster's. A member that does not answer holds it back.
async fn raise_catalogue<SM: Machine>(inner: Arc<Inner<SM>>) {
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let members: Vec<(u64, Member)> = {
            let metrics = inner.raft.metrics();
            let m = metrics.borrow_watched();
            if m.current_leader != Some(inner.me) {
                continue;
            }
            m.membership_config.membership().nodes().map(|(id, member)| (*id, member.clone())).collect()
        };
        let cluster = version_gate::cluster_catalogue(&inner.store.read().expect("store lock"));
        if inner.catalogue <= cluster {
            continue;
        }
        let mut reads = vec![Some(inner.catalogue)];
        for (id, member) in members.iter().filter(|(id, _)| *id != inner.me) {
            let answer = inner.peers.link(*id, &member.raft).call(Request::Catalogue, Duration::from_secs(1)).await;
            reads.push(match answer {
                Ok(Response::Catalogue(v)) => Some(v),
                _ => None,
            });
        }
        let Some(to) = version_gate::agreed(&reads).filter(|to| *to > cluster) else { continue };
        match inner.propose_here(Command::Kv(vec![version_gate::raise(to)])).await {
            Ok(_) => tracing::info!(
                from = cluster,
                to,
                "raised the cluster's effect catalogue version: every member reads it"
            ),
            Err(e) => tracing::info!(error = %e, "raising the cluster's effect catalogue version waits"),
        }
    }
}

/// Where reclaim may free records in a cluster: below both the store's
/// last checkpoint (a replay starts after it) and the raft purge point (a
/// follower the log still reaches is sent the entries after it).
pub struct ReclaimBound {
    /// The applied index of the last committed checkpoint.
    pub checkpointed: Arc<AtomicU64>,
    /// What reclaim reads: the qlog index below which nothing is needed.
    pub below: Arc<AtomicU64>,
}

/// Purges the log through what was applied `hold` ago, no further: a node
/// away for less catches up from the log, one away longer receives a
/// snapshot. Samples the applied index a few times per hold, and asks
/// openraft for a snapshot (the checkpoint's meta, `state_machine.rs`)
/// before each purge, since it purges nothing a snapshot does not cover.
/// Keeps reclaim's bound up to date as the purge point moves.
async fn hold_purges<SM: Machine>(raft: Raft<Queen, SM>, hold: Duration, reclaim: ReclaimBound) {
    let every = (hold / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut samples: std::collections::VecDeque<(Instant, u64)> = Default::default();
    loop {
        tokio::time::sleep(every).await;
        let (applied, purged) = {
            let m = raft.metrics();
            let m = m.borrow_watched();
            (m.last_applied.as_ref().map(|id| id.index), m.purged.as_ref().map(|id| id.index))
        };
        // Raft index p is qlog index p + 1: records through it are purged.
        let purged_qlog = purged.map_or(0, |p| p + 1);
        let checkpointed = reclaim.checkpointed.load(Ordering::Acquire);
        reclaim.below.store(checkpointed.min(purged_qlog + 1), Ordering::Release);
        let Some(applied) = applied else { continue };
        samples.push_back((Instant::now(), applied));
        while samples.len() > 1 && samples[1].0.elapsed() >= hold {
            samples.pop_front();
        }
        let (at, upto) = samples[0];
        if at.elapsed() < hold || purged.is_some_and(|p| p >= upto) {
            continue;
        }
        if raft.trigger().snapshot().await.is_err() || raft.trigger().purge_log(upto).await.is_err() {
            return;
        }
    }
}

impl<SM: Machine> Inner<SM> {
    /// The leader this node knows of, and where it is reached: from the
    /// membership, or, before this node has received the membership, from
    /// the peers it was started with.
    fn leader(&self) -> Option<(u64, Member)> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow_watched();
        let leader = m.current_leader?;
        let member = m.membership_config.membership().get_node(&leader).cloned();
        let member = member.or_else(|| self.founders.get(&leader).cloned())?;
        Some((leader, member))
    }

    fn voters(&self) -> Vec<(u64, Member)> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow_watched();
        let membership = m.membership_config.membership();
        let voters: Vec<(u64, Member)> =
            membership.voter_ids().filter_map(|id| Some((id, membership.get_node(&id)?.clone()))).collect();
        if voters.is_empty() {
            return self.founders.iter().map(|(id, member)| (*id, member.clone())).collect();
        }
        voters
    }

    /// Plans `command` here, as the leader; `NotLeader` when this node is not.
    fn propose_here(&self, command: Command) -> Forwarded {
        let (reply, answer) = oneshot::channel();
        let sent = match self.tx.lock().expect("replicator lock").as_ref() {
            Some(tx) => tx.send(Msg::Propose(command, reply)).is_ok(),
            None => false,
        };
        let timeout = self.write_timeout;
        Box::pin(async move {
            if !sent {
                return Err(ProposeError::ShuttingDown);
            }
            match tokio::time::timeout(timeout, answer).await {
                Ok(answer) => answer.unwrap_or(Err(ProposeError::ShuttingDown)),
                Err(_) => Err(ProposeError::Timeout),
            }
        })
    }

    /// Sends `request` to the leader over the raft port, on raft's runtime.
    /// When another node becomes leader before the answer comes (the one
    /// asked froze, or lost its majority), the outcome is not known, and
    /// the caller hears so at once rather than at its timeout.
    async fn to_leader(
        &self,
        request: Request,
        leader: (u64, Member),
        timeout: Duration,
    ) -> Result<Response, ProposeError> {
        let link = self.peers.link(leader.0, &leader.1.raft);
        let raft = self.raft.clone();
        let asked = leader.0;
        let call = self.handle.spawn(async move {
            let wait = raft.wait(Some(timeout));
            let moved = wait.metrics(move |m| m.current_leader.is_some_and(|l| l != asked), "another node leads");
            tokio::select! {
                answer = link.call(request, timeout) => Some(answer),
                Ok(_) = moved => None,
            }
        });
        match call.await {
            // Another leader took over meanwhile: the command may still
            // commit through it, and a retry with the same ids is safe.
            Ok(None) => Err(ProposeError::Timeout),
            Ok(Some(Ok(response))) => Ok(response),
            // Sent and not answered (no answer in time, or the connection
            // closed first): it may have committed, and only a retry with
            // the same ids is safe.
            Ok(Some(Err(e))) if e.after_send() => Err(ProposeError::Timeout),
            // Never sent: nothing committed.
            Ok(Some(Err(_))) => Err(ProposeError::NotLeader { leader: Some(leader.0) }),
            Err(_) => Err(ProposeError::ShuttingDown),
        }
    }

    /// Waits, until `deadline` at most, until this node has applied through
    /// `index`; answers whether it has.
    async fn applied_through(&self, index: u64, deadline: Instant) -> bool {
        loop {
            let applied = self.apply_watch.applied();
            if self.store.read().expect("store lock").applied.index >= index {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, applied).await.is_err() {
                return false;
            }
        }
    }

    /// A call's deadline (the write timeout from now) and the leader, once
    /// the cluster has one before it; `NotAMember` as soon as this node
    /// knows it is none, since no leader answers a non-member's call and
    /// none sends it what it would wait to apply.
    async fn leader_within_timeout(&self) -> Result<(Instant, (u64, Member)), ProposeError> {
        let deadline = Instant::now() + self.write_timeout;
        loop {
            if self.not_a_member() {
                return Err(ProposeError::NotAMember);
            }
            if let Some(leader) = self.leader() {
                return Ok((deadline, leader));
            }
            if Instant::now() >= deadline {
                return Err(ProposeError::NotLeader { leader: None });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn not_a_member(&self) -> bool {
        self.standing.not_a_member(&self.raft.metrics().borrow_watched())
    }

    /// Leader `asked` answered that its membership `at` leaves this node
    /// out: this node was removed, and says so from now on (`standing.rs`);
    /// unless this node's own membership is newer, when the node asked no
    /// longer leads.
    fn told_removed(&self, at: RaftLogId, asked: u64) -> ProposeError {
        self.standing.told(at);
        match self.not_a_member() {
            true => ProposeError::NotAMember,
            false => ProposeError::NotLeader { leader: Some(asked) },
        }
    }
}

/// What is left of a call's time until `deadline`, at least enough for one
/// round trip.
fn left_of(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100))
}

impl<SM: Machine> Inner<SM> {
    /// A stopping leader hands its leadership to the voter that holds the
    /// most of its log, and waits (up to `TRANSFER_TIMEOUT`) until that one
    /// leads, so a planned restart costs one transfer and no election.
    async fn hand_over_leadership(&self) {
        let m = self.raft.metrics().borrow_watched().clone();
        if m.current_leader != Some(self.me) {
            return;
        }
        let voters: Vec<u64> = m.membership_config.membership().voter_ids().filter(|v| *v != self.me).collect();
        let matched = |v: &u64| m.replication.as_ref().and_then(|r| r.get(v).cloned().flatten()).map(|l| l.index);
        let Some(to) = voters.iter().copied().max_by_key(|v| matched(v)) else { return };
        let started = Instant::now();
        // The trigger itself may wait that long: openraft answers it once
        // its core has handled it, and a core cut off from every peer took
        // minutes (the cluster simulator's seed 7), during which SIGTERM
        // did not stop the node.
        let asked = tokio::time::timeout(TRANSFER_TIMEOUT, self.raft.trigger().transfer_leader(to)).await;
        if !matches!(asked, Ok(Ok(_))) {
            tracing::warn!(to, "leadership could not be handed over; stopping anyway, and the others elect a leader");
            return;
        }
        while started.elapsed() < TRANSFER_TIMEOUT {
            let leader = self.raft.metrics().borrow_watched().current_leader;
            if leader.is_some() && leader != Some(self.me) {
                tracing::info!(
                    to = leader,
                    ms = started.elapsed().as_millis() as u64,
                    "handed leadership over before stopping"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tracing::warn!(to, "leadership was not taken over within 3 s; stopping anyway, and the others elect a leader");
    }
}

impl<SM: Machine> Leader for Inner<SM> {
    fn forwarded(&self, command: Command) -> ForwardedAt {
        let answer = self.propose_here(command);
        let store = self.store.clone();
        Box::pin(async move {
            let answer = answer.await?;
            let applied = store.read().expect("store lock").applied.index;
            Ok((answer, applied))
        })
    }

    fn view_here(&self) -> MembershipView {
        membership::view(&self.raft.metrics().borrow_watched(), None)
    }

    fn change_here(&self, change: MembershipChange) -> Changed {
        let raft = self.raft.clone();
        let me = self.me;
        let handle = self.handle.clone();
        let derailed = self.derailed.clone();
        Box::pin(async move {
            let (view, state) = {
                let m = raft.metrics().borrow_watched().clone();
                (membership::view(&m, None), m.state)
            };
            // A leader that removed itself from the voters leads on (as a
            // learner) until its successor takes over; openraft must not be
            // asked for a change then (the cluster simulator's seed 9).
            if view.leader != Some(me) || state != ServerState::Leader || !view.voters.contains(&me) {
                return Err(ChangeRefusal::new("no_leader", "this node no longer leads: ask again"));
            }
            let members = membership::check(&change, &view)?;
            let call = handle.spawn(async move {
                derailed.store(true, Ordering::Release);
                let done = raft.change_membership(members, false).await;
                derailed.store(true, Ordering::Release);
                (done, raft)
            });
            match call.await {
                Ok((Ok(_), raft)) => Ok(membership::view(&raft.metrics().borrow_watched(), None)),
                Ok((Err(e), _)) => Err(ChangeRefusal::new("failed", e.to_string())),
                Err(e) => Err(ChangeRefusal::new("failed", e.to_string())),
            }
        })
    }
}

impl<SM: Machine> Replicator for RaftReplicator<SM> {
    /// On the leader the command goes to the sequencer at once; a follower
    /// forwards it, and that round trip is its own task's.
    fn propose_now(&self, command: Command) -> Result<Proposal<'static>, Box<Command>> {
        match self.inner.leader() {
            Some((leader, _)) if leader == self.inner.me => Ok(self.inner.propose_here(command)),
            _ => Err(Box::new(command)),
        }
    }

    fn propose(&self, command: Command) -> Proposal<'_> {
        let inner = &self.inner;
        Box::pin(async move {
            let (deadline, leader) = inner.leader_within_timeout().await?;
            if leader.0 == inner.me {
                return inner.propose_here(command).await;
            }
            let (timeout, asked) = (left_of(deadline), leader.0);
            let (answer, applied) = match inner.to_leader(Request::Forward(command), leader, timeout).await? {
                Response::Forwarded(answer) => answer?,
                Response::NotAMember(at) => return Err(inner.told_removed(at, asked)),
                _ => return Err(ProposeError::Timeout),
            };
            // The write is committed; the client may next read what it made
            // here (a topic it created, a row it wrote), so this node applies
            // that far before it answers (or until the deadline: the answer
            // stands either way).
            inner.applied_through(applied, deadline).await;
            Ok(answer)
        })
    }

    fn read_gate(&self) -> ReadGate<'_> {
        let inner = &self.inner;
        Box::pin(async move {
            let (deadline, leader) = inner.leader_within_timeout().await?;
            if leader.0 == inner.me {
                let confirmed = match inner.reads.confirm().await {
                    Ok(confirmed) => confirmed,
                    Err(ProposeError::Timeout) => return Err(ProposeError::Timeout),
                    Err(_) => return Err(ProposeError::NotLeader { leader: inner.leader().map(|l| l.0) }),
                };
                return if inner.applied_through(confirmed.index, deadline).await {
                    Ok(())
                } else {
                    Err(ProposeError::Timeout)
                };
            }
            let timeout = left_of(deadline);
            let index = match inner.to_leader(Request::ReadIndex, leader.clone(), timeout).await? {
                Response::ReadIndex(Ok(index)) => index,
                Response::ReadIndex(Err(e)) => {
                    tracing::info!(leader = leader.0, error = %e, "the leader could not confirm a read index");
                    return Err(ProposeError::NotLeader { leader: Some(leader.0) });
                }
                Response::NotAMember(at) => return Err(inner.told_removed(at, leader.0)),
                _ => return Err(ProposeError::NotLeader { leader: Some(leader.0) }),
            };
            if inner.applied_through(index, deadline).await {
                Ok(())
            } else {
                Err(ProposeError::Timeout)
            }
        })
    }

    fn stop(&self) {
        let runtime = self.runtime.lock().expect("replicator lock").take();
        if let Some(runtime) = runtime {
            runtime.block_on(self.shut_down());
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
        self.log.stop();
        tracing::info!("raft replicator stopped");
    }

    fn membership(&self) -> Option<Admin<'_, MembershipView>> {
        let inner = &self.inner;
        Some(Box::pin(async move {
            let local = || {
                let age = inner.last_leader_view.lock().expect("view age lock").elapsed();
                membership::view(&inner.raft.metrics().borrow_watched(), Some(age))
            };
            match inner.leader() {
                Some((id, _)) if id == inner.me => inner.view_here(),
                Some(leader) => match inner.to_leader(Request::Membership, leader, Duration::from_secs(2)).await {
                    Ok(Response::Membership(view)) => {
                        *inner.last_leader_view.lock().expect("view age lock") = Instant::now();
                        view
                    }
                    _ => local(),
                },
                None => local(),
            }
        }))
    }

    fn change_membership(&self, change: MembershipChange) -> Option<Admin<'_, Result<MembershipView, ChangeRefusal>>> {
        let inner = &self.inner;
        Some(Box::pin(async move {
            if inner.not_a_member() {
                return Err(ChangeRefusal::new("not_a_member", ProposeError::NotAMember.to_string()));
            }
            match inner.leader() {
                Some((id, _)) if id == inner.me => inner.change_here(change).await,
                Some(leader) => {
                    match inner.to_leader(Request::ChangeMembership(change), leader, inner.write_timeout).await {
                        Ok(Response::MembershipChanged(answer)) => answer,
                        _ => Err(ChangeRefusal::new("no_leader", "the leader could not be reached: ask again")),
                    }
                }
                None => {
                    Err(ChangeRefusal::new("no_quorum", "this node knows of no leader: the cluster may not commit"))
                }
            }
        }))
    }

    fn leader(&self) -> Option<(u64, Member)> {
        self.inner.leader()
    }

    fn voters(&self) -> Vec<(u64, Member)> {
        self.inner.voters()
    }

    fn raft_status(&self) -> Option<RaftStatus> {
        let m = self.inner.raft.metrics().borrow_watched().clone();
        let apply = self.inner.guard.report();
        let role = match m.state {
            _ if apply.failure.is_some() || self.log.failure().is_some() => "stopped",
            ServerState::Leader => "leader",
            ServerState::Candidate => "candidate",
            ServerState::Learner => "learner",
            _ => "follower",
        };
        Some(RaftStatus {
            node: self.inner.me,
            role,
            term: m.current_term,
            leader: m.current_leader,
            applied: m.last_applied.map_or(0, |id| id.index + 1),
            commit: m.local_committed.map_or(0, |id| id.index + 1),
            purged: m.purged.map_or(0, |id| id.index + 1),
            catalogue: version_gate::Versions {
                build: self.inner.catalogue,
                cluster: version_gate::cluster_catalogue(&self.inner.store.read().expect("store lock")),
            },
            voters: m.membership_config.membership().voter_ids().collect(),
            joining: self.inner.standing.joining(&m),
            removed: !self.inner.standing.joining(&m) && self.inner.standing.not_a_member(&m),
            apply,
        })
    }
}
