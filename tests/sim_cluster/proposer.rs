//! The proposer of `src/replicate/raft/proposer.rs`, step for step, as a
//! task of the simulation's runtime instead of a thread of its own (which
//! blocks on openraft's runtime and sleeps on the machine's clock): on the
//! leader it settles after a term change or a void (everything handed over
//! answered, the log applied to its end), plans against the store and its
//! overlay, and hands the entries to openraft in order. Every entry a
//! client is answered `Applied` for goes into the ledger. The answers
//! planned without an entry go through the real read confirmer
//! (`read_confirm.rs`), unless the run's plan turns it off to show what
//! the simulator catches without it.

use super::ledger::Ledger;
use super::node::{trace, SimRaft};
use futures_util::StreamExt;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::error::ClientWriteError;
use openraft::ServerState;
use queen::log_id::LogId;
use queen::planner::command::{Answer, Command};
use queen::planner::{Planned, Planner};
use queen::replicate::proposer::plan_clock::PlanClock;
use queen::replicate::raft::read_confirm::ReadConfirmer;
use queen::replicate::raft::types::{Applied, Proposed};
use queen::replicate::ProposeError;
use queen::store::Store;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// As in proposer.rs.
const PLAN_CHUNK: usize = 256;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The planner's wall clock at the simulation's start.
const EPOCH_US: i64 = 1_700_000_000_000_000;

pub type Reply = oneshot::Sender<Result<Answer, ProposeError>>;

/// A client's command, and where its answer goes.
pub struct Ask {
    pub command: Command,
    pub reply: Reply,
}

pub struct Proposer {
    raft: SimRaft,
    me: u64,
    store: Arc<RwLock<Store>>,
    ledger: Ledger,
    planner: Planner,
    led: Option<u64>,
    in_flight: Arc<AtomicUsize>,
    derailed: Arc<AtomicBool>,
    last_done: Option<oneshot::Receiver<()>>,
    /// The simulation's start, from which the planner's clock runs.
    epoch: Instant,
    /// Confirms leadership for the answers without an entry; none answers
    /// them at once, as before the read index (the test-only switch).
    reads: Option<Arc<ReadConfirmer<super::node::Recorded>>>,
    /// The timestamp rule the shipped proposers share.
    clock: PlanClock,
}

impl Proposer {
    pub fn new(
        raft: SimRaft,
        me: u64,
        (store, ledger): (Arc<RwLock<Store>>, Ledger),
        epoch: Instant,
        confirm_reads: bool,
    ) -> Self {
        let reads = confirm_reads.then(|| ReadConfirmer::new(raft.clone(), tokio::runtime::Handle::current()));
        Self {
            raft,
            me,
            store,
            ledger,
            planner: Planner::new(0, LogId::default()),
            led: None,
            in_flight: Arc::default(),
            derailed: Arc::default(),
            last_done: None,
            epoch,
            reads,
            clock: PlanClock::default(),
        }
    }

    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Ask>) {
        while let Some(first) = rx.recv().await {
            let mut asks = vec![first];
            while let Ok(next) = rx.try_recv() {
                asks.push(next);
            }
            self.handle(asks).await;
        }
    }

    async fn handle(&mut self, asks: Vec<Ask>) {
        let (leader, state, term) = {
            let m = self.raft.metrics();
            let m = m.borrow_watched();
            (m.current_leader, m.state, m.current_term)
        };
        if leader != Some(self.me) || state != ServerState::Leader {
            self.led = None;
            for ask in asks {
                let _ = ask.reply.send(Err(ProposeError::NotLeader { leader }));
            }
            return;
        }
        if (self.led != Some(term) || self.derailed.load(Ordering::Acquire)) && !self.settle().await {
            for ask in asks {
                let _ = ask.reply.send(Err(ProposeError::Timeout));
            }
            return;
        }
        let term = self.led.expect("the planner leads in a term once settled");
        let mut asks = asks.into_iter().peekable();
        while asks.peek().is_some() {
            let chunk: Vec<_> = asks.by_ref().take(PLAN_CHUNK).collect();
            let now = EPOCH_US + self.epoch.elapsed().as_micros() as i64;
            let planned: Vec<(Planned, Reply)> = {
                let store = self.store.read().expect("store lock");
                self.planner.caught_up_with(&store);
                let at = self.clock.stamp(now, store.applied_us);
                chunk.into_iter().map(|a| (self.planner.plan(&store, a.command, at), a.reply)).collect()
            };
            self.hand_over(term, planned).await;
        }
    }

    async fn settle(&mut self) -> bool {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while Instant::now() < deadline {
            let (leader, term, last) = {
                let m = self.raft.metrics();
                let m = m.borrow_watched();
                (m.current_leader, m.current_term, m.last_log_index.map_or(0, |i| i + 1))
            };
            if leader != Some(self.me) {
                return false;
            }
            let applied = self.store.read().expect("store lock").applied.index;
            if self.in_flight.load(Ordering::Acquire) == 0 && applied == last {
                self.planner.lead((term, self.me), LogId::new(term, last));
                self.led = Some(term);
                self.derailed.store(false, Ordering::Release);
                return true;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        false
    }

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
        let stream = if proposals.is_empty() { None } else { Some(self.raft.client_write_many(proposals).await) };
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let (done, next) = oneshot::channel();
        let before = self.last_done.replace(next);
        let (in_flight, derailed, ledger) = (self.in_flight.clone(), self.derailed.clone(), self.ledger.clone());
        let reads = self.reads.clone();
        let me = self.me;
        tokio::spawn(async move {
            match stream {
                Some(Ok(results)) => {
                    // The stream may end before every entry is answered (the
                    // core stopped); polled again after its end it panics.
                    let mut results = results.fuse();
                    for (answer, reply) in with_entry {
                        let outcome = match results.next().await {
                            Some(Ok(Ok(written))) if written.response == Applied::Applied => {
                                ledger.answered(written.log_id);
                                Ok(answer)
                            }
                            Some(Ok(Err(ClientWriteError::ForwardToLeader(f)))) => {
                                Err(ProposeError::NotLeader { leader: f.leader_id })
                            }
                            _ => Err(ProposeError::Timeout),
                        };
                        if outcome.is_err() {
                            derailed.store(true, Ordering::Release);
                        }
                        let _ = reply.send(outcome);
                    }
                }
                Some(Err(fatal)) => {
                    trace(|| format!("node {me}: openraft has stopped: {fatal}"));
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
