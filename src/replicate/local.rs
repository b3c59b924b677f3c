//! The single-node replicator: the proposer, the log store and the state
//! machine composed on one node, a pipeline of three threads so that the
//! disk is kept busy while the CPU plans and applies.
//!
//! - the proposer's sequencer plans every command that arrives and adds it
//!   to the log store's open batch, which stages its records;
//! - the log store's syncer takes the open batch whenever it is free, so
//!   whatever arrives during one fsync shares the next (group commit),
//!   writes it into every log it touches, fdatasyncs each of them once, and
//!   calls back: on one node a durable entry is committed;
//! - the state machine's applier applies the batch, answers its commands,
//!   and checkpoints.
//!
//! No answer leaves before its batch, and every batch before it, is durable
//! and applied: the batches pass through each stage in order.

use super::log_store::open_batch::OpenBatch;
use super::log_store::syncer::Syncer;
use super::proposer::sequencer::Sequencer;
use super::proposer::Msg;
use super::raft::version_gate;
use super::stage::spawn;
use super::state_machine::after_apply::{AfterApply, CheckpointPace};
use super::state_machine::applier::Applier;
use super::{Proposal, ProposeError, ReadGate, Replicator};
use crate::apply_watch::ApplyWatch;
use crate::clock::Clock;
use crate::log_id::LogId;
use crate::metrics::Metrics;
use crate::planner::command::Command;
use crate::planner::Planner;
use crate::qlog::files::FileTable;
use crate::qlog::sync_ledger::SyncLedger;
use crate::qlog::writer::QlogWriter;
use crate::store::checkpointer::Checkpointer;
use crate::store::Store;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// What the pipeline's threads own between them.
pub struct Pipeline {
    pub planner: Planner,
    pub writer: QlogWriter,
    pub files: Arc<FileTable>,
    pub ledger: Option<Arc<SyncLedger>>,
    pub state: Arc<RwLock<Store>>,
    pub checkpointer: Checkpointer,
    /// The applied index of the last committed checkpoint: the log store
    /// forgets where the entries up to it sit.
    pub checkpointed: Arc<AtomicU64>,
    pub durable_every: Duration,
    pub durable_every_bytes: u64,
    pub metrics: Arc<Metrics>,
    /// Wakes readers after every apply: any, or per queue appended to.
    pub apply_watch: Arc<ApplyWatch>,
    pub clock: Arc<dyn Clock>,
    /// The effect catalogue version this build writes
    /// (`version_gate::EFFECT_CATALOGUE`, or a rehearsed one).
    pub catalogue: u32,
}

pub struct LocalReplicator {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl LocalReplicator {
    pub fn start(p: Pipeline) -> Self {
        let catalogue = p.catalogue;
        let older = p.state.read().expect("store lock").catalogue() < catalogue;
        let (tx, rx) = mpsc::channel();
        let (to_applier, applier_rx) = mpsc::channel();
        let open = Arc::new(OpenBatch::new(p.writer, p.checkpointed));
        let pace = CheckpointPace::new(p.checkpointer, (p.durable_every, p.durable_every_bytes), LogId::default());
        let after = AfterApply { metrics: p.metrics.clone(), apply_watch: p.apply_watch, checkpoints: Some(pace) };
        let applier = Applier { state: p.state.clone(), after };
        let applier = spawn("applier", move || applier.run(applier_rx));
        let syncer = Syncer {
            files: p.files.clone(),
            metrics: p.metrics,
            ledger: p.ledger,
            open: open.clone(),
            on_durable: Box::new(move |batch| to_applier.send(batch).is_ok()),
        };
        let syncer = spawn("syncer", move || syncer.run());
        let sequencer = Sequencer {
            planner: p.planner,
            state: p.state,
            open,
            files: p.files,
            clock: p.clock,
            threads: vec![syncer, applier],
        };
        let thread = spawn("sequencer", move || sequencer.run(rx));
        let replicator = Self { tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)) };
        if older {
            // One node is every member: the first entry it plans raises
            // the catalogue it writes, so every command after it is planned,
            // and every replay applies it, by this build's rules; and an
            // older build refuses the directory rather than misread it.
            drop(replicator.send(Command::Kv(vec![version_gate::raise(catalogue)])));
        }
        replicator
    }

    /// Hands the command to the sequencer now; the future waits for its answer.
    fn send(&self, command: Command) -> Proposal<'static> {
        let (reply, answer) = oneshot::channel();
        let sent = match self.tx.lock().expect("replicator lock").as_ref() {
            Some(tx) => tx.send(Msg::Propose(command, reply)).is_ok(),
            None => false,
        };
        Box::pin(async move {
            if !sent {
                return Err(ProposeError::ShuttingDown);
            }
            answer.await.unwrap_or(Err(ProposeError::ShuttingDown))
        })
    }
}

/// A replicator dropped without `stop` still drains, and its final
/// checkpoint is written before the drop returns.
impl Drop for LocalReplicator {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Replicator for LocalReplicator {
    fn propose(&self, command: Command) -> Proposal<'_> {
        self.send(command)
    }

    fn propose_now(&self, command: Command) -> Result<Proposal<'static>, Box<Command>> {
        Ok(self.send(command))
    }

    /// One node answers a write only once it is applied: its applied state
    /// always holds every committed write, and the gate is open.
    fn read_gate(&self) -> ReadGate<'_> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn stop(&self) {
        if let Some(tx) = self.tx.lock().expect("replicator lock").take() {
            let _ = tx.send(Msg::Stop);
        }
        if let Some(t) = self.thread.lock().expect("replicator lock").take() {
            let _ = t.join();
        }
    }
}
