//! The proposer's thread under raft: on the leader, plans commands against
//! the store and its overlay, and hands the planned entries to openraft in
//! order (`client_write_many`), each stamped with the qlog id the log will
//! give it when nothing comes between.
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
use super::state_machine::RaftMachine;
use super::types::{Applied, Proposed, Queen};
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
use openraft::{Raft, ServerState};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The most commands planned into one hand-over to openraft.
const PLAN_CHUNK: usize = 256;
/// How long a new leadership may take to settle before the commands
/// waiting for it are answered `Timeout`.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Proposer {
    pub raft: Raft<Queen, RaftMachine>,
    pub me: u64,
    pub store: Arc<RwLock<Store>>,
    pub handle: tokio::runtime::Handle,
    pub planner: Planner,
    /// The term the planner leads in, once settled.
    pub led: Option<u64>,
    /// Hand-overs not answered yet.
    pub in_flight: Arc<AtomicUsize>,
    /// Set when an entry of this leadership was voided or refused.
    pub derailed: Arc<AtomicBool>,
    /// Resolves once the last hand-over is answered: commands with no entry
    /// are answered after every entry planned before them.
    pub last_done: Option<oneshot::Receiver<()>>,
    /// Confirms leadership for the answers planned without an entry.
    pub reads: Arc<ReadConfirmer<RaftMachine>>,
    pub clock: PlanClock,
}

impl Proposer {
    pub fn run(mut self, rx: mpsc::Receiver<Msg>) {
        loop {
            let Some(Taken { commands, stop }) = inbox::take(&rx, Duration::from_secs(1)) else { continue };
            if !commands.is_empty() {
                self.handle(commands);
            }
            if stop {
                return;
            }
        }
    }

    fn handle(&mut self, commands: Vec<(Command, Reply)>) {
        let metrics = self.raft.metrics().borrow_watched().clone();
        if metrics.current_leader != Some(self.me) || metrics.state != ServerState::Leader {
            self.led = None;
            for (_, reply) in commands {
                let _ = reply.send(Err(ProposeError::NotLeader { leader: metrics.current_leader }));
            }
            return;
        }
        if (self.led != Some(metrics.current_term) || self.derailed.load(Ordering::Acquire)) && !self.settle() {
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
                let store = self.store.read().expect("store lock");
                self.planner.caught_up_with(&store);
                let at = self.clock.stamp(chrono::Utc::now().timestamp_micros(), store.applied_us);
                chunk.into_iter().map(|(c, r)| (self.planner.plan(&store, c, at), r)).collect()
            };
            self.hand_over(term, planned);
        }
    }

    /// Waits until every hand-over is answered and the log is applied to
    /// its end, then leads after it; `false` when that did not happen in
    /// time (or leadership moved meanwhile).
    fn settle(&mut self) -> bool {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while Instant::now() < deadline {
            let m = self.raft.metrics().borrow_watched().clone();
            if m.current_leader != Some(self.me) {
                return false;
            }
            let last = m.last_log_index.map_or(0, |i| i + 1);
            let applied = self.store.read().expect("store lock").applied.index;
            if self.in_flight.load(Ordering::Acquire) == 0 && applied == last {
                self.planner.lead((m.current_term, self.me), LogId::new(m.current_term, last));
                self.led = Some(m.current_term);
                self.derailed.store(false, Ordering::Release);
                tracing::info!(term = m.current_term, after = last, "this node plans as the leader");
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    /// Hands the chunk's entries to openraft, in order, and answers each
    /// command once its entry is applied (a command with no entry once every
    /// entry handed over before it is, and this node's leadership in `term`
    /// is confirmed after it).
    fn hand_over(&mut self, term: u64, planned: Vec<(Planned, Reply)>) {
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
        let stream = if proposals.is_empty() {
            None
        } else {
            let raft = self.raft.clone();
            Some(self.handle.block_on(async move { raft.client_write_many(proposals).await }))
        };
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let (done, next) = oneshot::channel();
        let before = self.last_done.replace(next);
        let (in_flight, derailed, reads, me) =
            (self.in_flight.clone(), self.derailed.clone(), self.reads.clone(), self.me);
        self.handle.spawn(async move {
            match stream {
                Some(Ok(results)) => {
                    // The stream may end before every entry is answered (the
                    // core stopped); polled again after its end it panics.
                    let mut results = results.fuse();
                    for (answer, reply) in with_entry {
                        let outcome = match results.next().await {
                            Some(Ok(Ok(written))) if written.response == Applied::Applied => Ok(answer),
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
                Some(Err(_)) => {
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
            if stale {
                for (_, reply) in without {
                    let _ = reply.send(Err(ProposeError::Timeout));
                }
            } else {
                reads.answer(me, term, without).await;
            }
        });
    }
}
