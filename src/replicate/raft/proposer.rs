//! The proposer under raft: a task on raft's runtime that, on the leader,
//! plans commands against the store and its overlay, and hands the planned
//! entries to openraft in order (`client_write_many`), each stamped with
//! the qlog id the log will give it when nothing comes between. A node runs
//! it, and so does the cluster simulator, on its seeded runtime and clock.
//!
//! The planner leads from a known point: when this node starts to lead a
//! term, and after any entry of its was voided (raft gave it another id),
//! it waits until everything it handed over is answered and everything in
//! the log is applied, and leads again after the last entry. Until then it
//! plans nothing, so no plan rests on a decision that did not happen.
//!
//! A command planned without an entry (it writes nothing) is answered once
//! every entry planned before it is, and once a read index confirms that
//! this node still led in its term after it was planned (`read_confirm.rs`).

use super::read_confirm::ReadConfirmer;
use super::types::{Applied, Proposed, Queen};
use crate::clock::Clock;
use crate::log_id::LogId;
use crate::planner::command::Command;
use crate::planner::{Planned, Planner};
use crate::replicate::batch::Reply;
use crate::replicate::proposer::inbox::{self, Msg, Taken};
use crate::replicate::proposer::plan_clock::PlanClock;
use crate::replicate::ProposeError;
use crate::store::Store;
use futures_util::StreamExt;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::error::ClientWriteError;
use openraft::storage::RaftStateMachine;
use openraft::type_config::alias::LogIdOf;
use openraft::{Raft, ServerState};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The most commands planned into one hand-over to openraft.
const PLAN_CHUNK: usize = 256;
/// How long a new leadership may take to settle before the commands
/// waiting for it are answered `Timeout`.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Told the raft log id of every entry whose command is answered `Ok`: the
/// cluster simulator's ledger of acknowledged writes.
pub type OnAnswered = Arc<dyn Fn(LogIdOf<Queen>) + Send + Sync>;

/// What a proposer is started with.
pub struct Seat<SM: RaftStateMachine<Queen>> {
    pub raft: Raft<Queen, SM>,
    pub me: u64,
    pub store: Arc<RwLock<Store>>,
    /// Set by whoever takes a log slot the planner did not plan for (a
    /// membership change), so that it settles again before it plans on.
    pub derailed: Arc<AtomicBool>,
    /// Confirms leadership for the answers planned without an entry. `None`
    /// answers them at once, unconfirmed: only the cluster simulator's
    /// deliberately broken variant passes it, to show its checker catches
    /// the stale reads that follow.
    pub reads: Option<Arc<ReadConfirmer<SM>>>,
    /// Where the plan's time comes from (`Clock::wall_us`).
    pub clock: Arc<dyn Clock>,
    pub on_answered: Option<OnAnswered>,
    /// The raft group it plans for (`Planner::in_group`).
    pub group: u32,
}

struct Proposer<SM: RaftStateMachine<Queen>> {
    seat: Seat<SM>,
    planner: Planner,
    /// The term the planner leads in, once settled.
    led: Option<u64>,
    /// Hand-overs not answered yet.
    in_flight: Arc<AtomicUsize>,
    /// Resolves once the last hand-over is answered: commands with no entry
    /// are answered after every entry planned before them.
    last_done: Option<oneshot::Receiver<()>>,
    stamps: PlanClock,
}

/// Starts the proposer on the current runtime; it ends on `Msg::Stop` or
/// once every sender is dropped.
pub fn spawn<SM: RaftStateMachine<Queen>>(seat: Seat<SM>) -> (mpsc::UnboundedSender<Msg>, JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let proposer = Proposer {
        planner: Planner::new(0, LogId::default()).in_group(seat.group),
        seat,
        led: None,
        in_flight: Arc::default(),
        last_done: None,
        stamps: PlanClock::default(),
    };
    (tx, tokio::spawn(proposer.run(rx)))
}

impl<SM: RaftStateMachine<Queen>> Proposer<SM> {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        loop {
            let Taken { commands, stop } = inbox::take_async(&mut rx).await;
            if !commands.is_empty() {
                self.handle(commands).await;
            }
            if stop {
                return;
            }
        }
    }

    async fn handle(&mut self, commands: Vec<(Command, Reply)>) {
        let (leader, state, term) = {
            let metrics = self.seat.raft.metrics();
            let m = metrics.borrow_watched();
            (m.current_leader, m.state, m.current_term)
        };
        if leader != Some(self.seat.me) || state != ServerState::Leader {
            self.led = None;
            for (_, reply) in commands {
                let _ = reply.send(Err(ProposeError::NotLeader { leader }));
            }
            return;
        }
        if (self.led != Some(term) || self.seat.derailed.load(Ordering::Acquire)) && !self.settle().await {
            for (_, reply) in commands {
                let _ = reply.send(Err(ProposeError::Timeout));
            }
            return;
        }
        let term = self.led.expect("the planner leads in a term once settled");
        let mut commands = commands.into_iter().peekable();
        while commands.peek().is_some() {
            let chunk: Vec<_> = commands.by_ref().take(PLAN_CHUNK).collect();
            let planned: Vec<(Planned, Reply)> = {
                let store = self.seat.store.read().expect("store lock");
                self.planner.caught_up_with(&store);
                let at = self.stamps.stamp(self.seat.clock.wall_us(), store.applied_us);
                chunk.into_iter().map(|(c, r)| (self.planner.plan(&store, c, at), r)).collect()
            };
            self.hand_over(term, planned).await;
        }
    }

    /// Waits until every hand-over is answered and the log is applied to
    /// its end, then leads after it; `false` when that did not happen in
    /// time (or leadership moved meanwhile).
    async fn settle(&mut self) -> bool {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while Instant::now() < deadline {
            let (leader, term, last) = {
                let metrics = self.seat.raft.metrics();
                let m = metrics.borrow_watched();
                (m.current_leader, m.current_term, m.last_log_index.map_or(0, |i| i + 1))
            };
            if leader != Some(self.seat.me) {
                return false;
            }
            let applied = self.seat.store.read().expect("store lock").applied.index;
            if self.in_flight.load(Ordering::Acquire) == 0 && applied == last {
                self.planner.lead((term, self.seat.me), LogId::new(term, last));
                self.led = Some(term);
                self.seat.derailed.store(false, Ordering::Release);
                tracing::info!(term, after = last, "this node plans as the leader");
                return true;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        false
    }

    /// Hands the chunk's entries to openraft, in order, and answers each
    /// command once its entry is applied (a command with no entry once every
    /// entry handed over before it is, and this node's leadership in `term`
    /// is confirmed after it).
    async fn hand_over(&mut self, term: u64, planned: Vec<(Planned, Reply)>) {
        let mut proposals = Vec::new();
        let (mut with_entry, mut without) = (Vec::new(), Vec::new());
        for (p, reply) in planned {
            match p.entry {
                Some(e) => {
                    proposals.push(Proposed { planned: e.id, body: e.body, messages: e.messages });
                    with_entry.push((p.answer, reply));
                }
                None => without.push((p.answer, reply)),
            }
        }
        let stream = if proposals.is_empty() { None } else { Some(self.seat.raft.client_write_many(proposals).await) };
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let (done, next) = oneshot::channel();
        let before = self.last_done.replace(next);
        let (in_flight, derailed) = (self.in_flight.clone(), self.seat.derailed.clone());
        let (reads, on_answered, me) = (self.seat.reads.clone(), self.seat.on_answered.clone(), self.seat.me);
        tokio::spawn(async move {
            match stream {
                Some(Ok(results)) => {
                    // The stream may end before every entry is answered (the
                    // core stopped); polled again after its end it panics.
                    let mut results = results.fuse();
                    for (answer, reply) in with_entry {
                        let outcome = match results.next().await {
                            Some(Ok(Ok(written))) if written.response == Applied::Applied => {
                                if let Some(on_answered) = &on_answered {
                                    on_answered(written.log_id);
                                }
                                Ok(answer)
                            }
                            Some(Ok(Err(ClientWriteError::ForwardToLeader(f)))) => {
                                Err(ProposeError::NotLeader { leader: f.leader_id })
                            }
                            // Voided, discarded by a new leader, or lost with
                            // a stopping core: never applied here, and a
                            // retry with the same ids is safe.
                            _ => Err(ProposeError::Timeout),
                        };
                        if outcome.is_err() {
                            derailed.store(true, Ordering::Release);
                        }
                        let _ = reply.send(outcome);
                    }
                }
                Some(Err(fatal)) => {
                    tracing::warn!(node = me, error = %fatal, "openraft has stopped: the writes handed to it are not answered");
                    derailed.store(true, Ordering::Release);
                    for (_, reply) in with_entry {
                        let _ = reply.send(Err(ProposeError::ShuttingDown));
                    }
                }
                None => {}
            }
            if let Some(before) = before {
                let _ = before.await;
            }
            // An answer planned on a decision that was voided is not given.
            let stale = derailed.load(Ordering::Acquire);
            in_flight.fetch_sub(1, Ordering::AcqRel);
            let _ = done.send(());
            match reads {
                _ if stale => {
                    for (_, reply) in without {
                        let _ = reply.send(Err(ProposeError::Timeout));
                    }
                }
                Some(reads) => reads.answer(me, term, without).await,
                None => {
                    for (answer, reply) in without {
                        let _ = reply.send(Ok(answer));
                    }
                }
            }
        });
    }
}
