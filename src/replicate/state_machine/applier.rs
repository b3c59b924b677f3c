//! The state machine's stage of the pipeline: applies each durable batch to the store,
//! answers its commands, and hands changed rows to the checkpointer every
//! `QUEEN_RAFT_DURABLE_EVERY_MS` or `QUEEN_RAFT_DURABLE_EVERY_BYTES`.

use crate::apply_watch::ApplyWatch;
use crate::log_id::LogId;
use crate::metrics::Metrics;
use crate::planner::apply::apply;
use crate::planner::command::{Answer, PushStatus};
use crate::replicate::batch::Batch;
use crate::replicate::batch::LocalTicket;
use crate::store::checkpointer::Checkpointer;
use crate::store::Store;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub(crate) struct Applier {
    pub state: Arc<RwLock<Store>>,
    pub checkpointer: Checkpointer,
    pub durable_every: Duration,
    pub durable_every_bytes: u64,
    pub metrics: Arc<Metrics>,
    pub apply_watch: Arc<ApplyWatch>,
}

impl Applier {
    pub fn run(mut self, rx: mpsc::Receiver<Batch<LocalTicket>>) {
        let mut last_checkpoint = Instant::now();
        let mut bytes_since = 0u64;
        let mut checkpointed = LogId::default();
        loop {
            let wait = self.durable_every.saturating_sub(last_checkpoint.elapsed()).max(Duration::from_millis(1));
            let stop = match rx.recv_timeout(wait) {
                Ok(batch) => {
                    bytes_since += batch.bytes;
                    self.apply(batch);
                    false
                }
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => true,
            };
            if stop || last_checkpoint.elapsed() >= self.durable_every || bytes_since >= self.durable_every_bytes {
                self.checkpoint(&mut checkpointed);
                last_checkpoint = Instant::now();
                bytes_since = 0;
            }
            if stop {
                self.checkpointer.flush();
                return;
            }
        }
    }

    fn apply(&mut self, batch: Batch<LocalTicket>) {
        let entries = batch.items.iter().filter_map(|(p, _)| p.entry.as_ref());
        let mut count = 0;
        {
            let mut store = self.state.write().expect("store lock");
            for (entry, locs) in entries.zip(&batch.locations) {
                apply(&mut store, entry, locs);
                count += 1;
            }
            self.metrics.applied_index.set(store.applied.index as i64);
        }
        if count > 0 {
            self.metrics.entries_applied.inc_by(count);
            self.metrics.group_commits.inc();
            self.metrics.qlog_bytes_written.inc_by(batch.bytes);
            self.metrics.group_commit_entries.observe(count as f64);
            self.metrics.group_commit_seconds.observe(batch.started.elapsed().as_secs_f64());
            let mut queues: Vec<u64> = batch
                .items
                .iter()
                .flat_map(|(p, _)| p.entry.iter().flat_map(|e| &e.messages))
                .map(|m| m.span.queue)
                .collect();
            queues.sort_unstable();
            queues.dedup();
            self.apply_watch.batch_applied(queues);
        }
        for (p, reply) in batch.items {
            if let Answer::Pushed(outcomes) = &p.answer {
                let counted = |status| outcomes.iter().filter(|o| o.status == status).count() as u64;
                self.metrics.messages_appended.inc_by(counted(PushStatus::Queued));
                self.metrics.duplicates.inc_by(counted(PushStatus::Duplicate));
            }
            let _ = reply.send(Ok(p.answer));
        }
    }

    /// Hands the rows changed since the last checkpoint to the checkpointer,
    /// unless nothing was applied since.
    fn checkpoint(&mut self, checkpointed: &mut LogId) {
        if self.checkpointer.changed(&self.state, checkpointed) {
            self.metrics.checkpoints.inc();
        }
    }
}
