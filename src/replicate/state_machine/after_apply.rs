//! What both state machines do once they have applied entries, on one node
//! and under raft alike: count them in the node's metrics, wake the readers
//! of the queues they appended to, and hand the rows changed since the last
//! checkpoint to the checkpointer every `QUEEN_RAFT_DURABLE_EVERY_MS`, or
//! sooner once `QUEEN_RAFT_DURABLE_EVERY_BYTES` of records were applied.

use crate::apply_watch::ApplyWatch;
use crate::log_id::LogId;
use crate::metrics::Metrics;
use crate::store::checkpointer::Checkpointer;
use crate::store::Store;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
// The pace's clock: tokio's, which a simulated run steps (outside a
// runtime, and in a process, it is std's).
type PaceInstant = tokio::time::Instant;

pub struct AfterApply {
    pub metrics: Arc<Metrics>,
    /// Wakes readers after every apply: any, or per queue appended to.
    pub apply_watch: Arc<ApplyWatch>,
    /// None in tests that run the parts alone, which checkpoint nothing.
    pub checkpoints: Option<CheckpointPace>,
}

/// When the changed rows go to the checkpointer.
pub struct CheckpointPace {
    checkpointer: Checkpointer,
    every: Duration,
    every_bytes: u64,
    last: PaceInstant,
    bytes_since: u64,
    /// The applied id of the last checkpoint handed over.
    done: LogId,
}

/// One apply's worth of entries, as counted.
pub struct AppliedBatch<Q> {
    pub entries: u64,
    /// The bytes of their records in the log.
    pub bytes: u64,
    /// The store's applied index after them.
    pub applied_index: u64,
    /// When their group commit started, on one node (raft's entries come
    /// from several, and their time is not known here).
    pub started: Option<Instant>,
    /// The queues they appended to (repeats are harmless).
    pub queues: Q,
}

impl CheckpointPace {
    /// Paces from now; `done` is the applied id of the checkpoint the node
    /// booted from.
    pub fn new(checkpointer: Checkpointer, (every, every_bytes): (Duration, u64), done: LogId) -> Self {
        Self { checkpointer, every, every_bytes, last: PaceInstant::now(), bytes_since: 0, done }
    }

    /// How long until a checkpoint is due by time.
    pub fn due_in(&self) -> Duration {
        self.every.saturating_sub(self.last.elapsed())
    }

    /// Hands the changed rows over when due, or `now`; `true` when some
    /// were handed over.
    fn tend(&mut self, store: &RwLock<Store>, now: bool) -> bool {
        if !now && self.last.elapsed() < self.every && self.bytes_since < self.every_bytes {
            return false;
        }
        self.last = PaceInstant::now();
        self.bytes_since = 0;
        self.checkpointer.changed(store, &mut self.done)
    }
}

impl AfterApply {
    /// Counts, wakes and checkpoints after `batch`.
    pub fn batch(&mut self, store: &RwLock<Store>, batch: AppliedBatch<impl IntoIterator<Item = u64>>) {
        self.metrics.applied_index.set(batch.applied_index as i64);
        if batch.entries > 0 {
            self.metrics.entries_applied.inc_by(batch.entries);
            self.metrics.group_commits.inc();
            self.metrics.qlog_bytes_written.inc_by(batch.bytes);
            self.metrics.group_commit_entries.observe(batch.entries as f64);
            if let Some(started) = batch.started {
                self.metrics.group_commit_seconds.observe(started.elapsed().as_secs_f64());
            }
            self.apply_watch.batch_applied(batch.queues);
        }
        if let Some(pace) = self.checkpoints.as_mut() {
            pace.bytes_since += batch.bytes;
        }
        self.tend(store, false);
    }

    /// Checkpoints when one is due (or `now`).
    pub fn tend(&mut self, store: &RwLock<Store>, now: bool) {
        if self.checkpoints.as_mut().is_some_and(|pace| pace.tend(store, now)) {
            self.metrics.checkpoints.inc();
        }
    }

    /// How long until a checkpoint is due by time.
    pub fn due_in(&self) -> Duration {
        self.checkpoints.as_ref().map_or(Duration::from_secs(1), CheckpointPace::due_in)
    }

    /// A last checkpoint of everything applied, committed before it returns.
    pub fn finish(&mut self, store: &RwLock<Store>) {
        self.tend(store, true);
        if let Some(pace) = &self.checkpoints {
            pace.checkpointer.flush();
        }
    }
}
