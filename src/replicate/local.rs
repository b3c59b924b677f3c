//! The single-node replicator: a sequencer thread that takes every command
//! waiting, plans them into entries, writes them to the qlog with one fsync
//! per touched log (group commit), applies them, and only then answers.

use super::{Proposal, ProposeError, Replicator};
use crate::fatal;
use crate::log_id::LogId;
use crate::metrics::Metrics;
use crate::planner::apply::apply;
use crate::planner::command::{Answer, Command, PushStatus};
use crate::planner::Planner;
use crate::qlog::writer::{EntryWrite, QlogWriter};
use crate::store::checkpointer::Checkpointer;
use crate::store::Store;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The most commands one group commit takes.
const MAX_BATCH: usize = 8192;

enum Msg {
    Propose(Command, oneshot::Sender<Result<Answer, ProposeError>>),
    Stop,
}

pub struct LocalReplicator {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the sequencer owns.
pub struct Sequencer {
    pub planner: Planner,
    pub writer: QlogWriter,
    pub state: Arc<RwLock<Store>>,
    pub checkpointer: Checkpointer,
    pub durable_every: Duration,
    pub durable_every_bytes: u64,
    pub metrics: Arc<Metrics>,
    /// Woken after every apply, for readers that wait for new data.
    pub applied: Arc<tokio::sync::Notify>,
}

impl LocalReplicator {
    pub fn start(sequencer: Sequencer) -> Self {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("sequencer".into())
            .spawn(move || sequencer.run(rx))
            .expect("spawn the sequencer thread");
        Self { tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)) }
    }
}

impl Replicator for LocalReplicator {
    fn propose(&self, command: Command) -> Proposal<'_> {
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

    fn stop(&self) {
        if let Some(tx) = self.tx.lock().expect("replicator lock").take() {
            let _ = tx.send(Msg::Stop);
        }
        if let Some(t) = self.thread.lock().expect("replicator lock").take() {
            let _ = t.join();
        }
    }
}

impl Sequencer {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut last_checkpoint = Instant::now();
        let mut bytes_at_checkpoint = self.writer.bytes_written;
        let mut last_ts = 0i64;
        let mut checkpointed = LogId::default();
        loop {
            let wait = self.durable_every.saturating_sub(last_checkpoint.elapsed()).max(Duration::from_millis(1));
            let mut batch = Vec::new();
            let mut stop = false;
            match rx.recv_timeout(wait) {
                Ok(Msg::Propose(c, r)) => batch.push((c, r)),
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => stop = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
            while !stop && batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(Msg::Propose(c, r)) => batch.push((c, r)),
                    Ok(Msg::Stop) => stop = true,
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                // The planner's clock moves forward with every batch, so a
                // batch not yet applied is always later than one that is.
                last_ts = (last_ts + 1).max(chrono::Utc::now().timestamp_micros());
                self.group_commit(batch, last_ts);
            }
            let written = self.writer.bytes_written - bytes_at_checkpoint;
            if stop || last_checkpoint.elapsed() >= self.durable_every || written >= self.durable_every_bytes {
                self.checkpoint(&mut checkpointed);
                last_checkpoint = Instant::now();
                bytes_at_checkpoint = self.writer.bytes_written;
            }
            if stop {
                self.checkpointer.flush();
                tracing::info!("sequencer stopped after a final checkpoint");
                return;
            }
        }
    }

    fn group_commit(
        &mut self,
        batch: Vec<(Command, oneshot::Sender<Result<Answer, ProposeError>>)>,
        timestamp_us: i64,
    ) {
        let started = Instant::now();
        let mut planned = Vec::with_capacity(batch.len());
        {
            let store = self.state.read().expect("store lock");
            for (command, reply) in batch {
                planned.push((self.planner.plan(&store, command, timestamp_us), reply));
            }
        }
        let entries: Vec<_> = planned.iter().filter_map(|(p, _)| p.entry.as_ref()).collect();
        if !entries.is_empty() {
            let writes: Vec<EntryWrite<'_>> = entries
                .iter()
                .map(|e| EntryWrite { id: e.id, effects: e.body.encode(), queues: e.queues(), messages: &e.messages })
                .collect();
            let before = self.writer.bytes_written;
            let locations = self.writer.write_batch(&writes).unwrap_or_else(|e| {
                fatal::exit(&format!("qlog write or fsync failed, so no write of this batch can be answered: {e}"))
            });
            {
                let mut store = self.state.write().expect("store lock");
                for (entry, locs) in entries.iter().zip(&locations) {
                    apply(&mut store, entry, locs);
                }
                self.metrics.applied_index.set(store.applied.index as i64);
            }
            self.metrics.entries_applied.inc_by(entries.len() as u64);
            self.metrics.group_commits.inc();
            self.metrics.qlog_bytes_written.inc_by(self.writer.bytes_written - before);
            self.metrics.group_commit_entries.observe(entries.len() as f64);
            self.metrics.group_commit_seconds.observe(started.elapsed().as_secs_f64());
            self.applied.notify_waiters();
        }
        self.planner.batch_applied();
        for (p, reply) in planned {
            if let Answer::Pushed(outcomes) = &p.answer {
                let queued = outcomes.iter().filter(|o| o.status == PushStatus::Queued).count() as u64;
                self.metrics.messages_appended.inc_by(queued);
                self.metrics.duplicates.inc_by(outcomes.len() as u64 - queued);
            }
            let _ = reply.send(Ok(p.answer));
        }
    }

    /// Hands the rows changed since the last checkpoint to the checkpointer,
    /// unless nothing was applied since.
    fn checkpoint(&mut self, checkpointed: &mut LogId) {
        let job = self.state.write().expect("store lock").checkpoint_job();
        if job.rows() == 0 && job.applied == *checkpointed {
            return;
        }
        *checkpointed = job.applied;
        self.metrics.checkpoints.inc();
        self.checkpointer.submit(job);
    }
}
