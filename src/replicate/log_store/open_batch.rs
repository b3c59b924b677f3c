//! The group commit being gathered, shared by the sequencer, which adds each
//! planned chunk to it, and the syncer, which takes it whole the moment it
//! is free. Taking it is the syncer's own step, not a hand-off from the
//! sequencer, so a finished fdatasync is followed by the next write without
//! waiting for another thread to be scheduled.

use crate::planner::Planned;
use crate::qlog::writer::{EntryWrite, QlogWriter};
use crate::replicate::batch::{Batch, Reply};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// The most commands one group commit takes: past it the sequencer waits for
/// the syncer, so a slow disk cannot grow one batch (and the applier's hold
/// of the store's lock) without bound.
const MAX_BATCH: usize = 16384;

pub(crate) struct OpenBatch {
    open: Mutex<Open>,
    /// Signalled when a chunk is added or the batch is closed.
    added: Condvar,
    /// Signalled when the syncer takes the batch.
    taken: Condvar,
    /// The applied index of the last committed checkpoint.
    checkpointed: Arc<AtomicU64>,
}

struct Open {
    /// Holds the batch's records, staged as each chunk is added.
    writer: QlogWriter,
    batch: Option<Batch>,
    closed: bool,
    /// How many batches the syncer has taken.
    batches_taken: u64,
}

impl OpenBatch {
    pub fn new(writer: QlogWriter, checkpointed: Arc<AtomicU64>) -> Self {
        Self {
            open: Mutex::new(Open { writer, batch: None, closed: false, batches_taken: 0 }),
            added: Condvar::new(),
            taken: Condvar::new(),
            checkpointed,
        }
    }

    /// Adds a planned chunk and stages its records. Its entries' log ids
    /// follow the last ones staged, index by index: the entry index refuses
    /// anything else.
    pub fn add(&self, planned: Vec<(Planned, Reply)>) {
        // Encoded before the lock, so the syncer waits for the copy only.
        let effects: Vec<_> = planned.iter().filter_map(|(p, _)| p.entry.as_ref().map(|e| e.body.encode())).collect();
        let mut open = self.open.lock().expect("open batch lock");
        while open.batch.as_ref().is_some_and(|b| b.planned.len() >= MAX_BATCH) {
            open = self.taken.wait(open).expect("open batch lock");
        }
        let Open { writer, batch, .. } = &mut *open;
        let batch = batch.get_or_insert_with(Batch::default);
        let entries = planned.iter().filter_map(|(p, _)| p.entry.as_ref());
        for (e, effects) in entries.zip(effects) {
            let write = EntryWrite { id: e.id, leader: e.leader, effects, queues: e.queues(), messages: &e.messages };
            batch.locations.push(writer.stage(&write));
        }
        batch.planned.extend(planned);
        drop(open);
        self.added.notify_one();
    }

    /// Lets go of the logs of deleted queues (`QlogWriter::retire`), and
    /// seals the files of idle logs (`QlogWriter::seal_idle`) in a batch of
    /// their own, or in the one being gathered.
    pub fn tend_idle(&self, deleted: impl Fn(u64) -> bool) {
        let mut open = self.open.lock().expect("open batch lock");
        let Open { writer, batch, batches_taken, .. } = &mut *open;
        writer.retire(deleted, *batches_taken);
        if writer.seal_idle() {
            batch.get_or_insert_with(Batch::default);
            drop(open);
            self.added.notify_one();
        }
    }

    /// The batch gathered so far, with its staged bytes, once there is one
    /// (a chunk was added, or idle logs were sealed); `None` once closed
    /// with nothing left.
    pub fn take(&self) -> Option<Batch> {
        let mut open = self.open.lock().expect("open batch lock");
        // The syncer comes back only once it has finished what it took.
        open.writer.batches_synced(open.batches_taken);
        open.writer.purge_through(self.checkpointed.load(Ordering::Acquire));
        loop {
            if let Some(mut batch) = open.batch.take() {
                open.batches_taken += 1;
                batch.pending = open.writer.take_pending();
                drop(open);
                self.taken.notify_one();
                return Some(batch);
            }
            if open.closed {
                return None;
            }
            open = self.added.wait(open).expect("open batch lock");
        }
    }

    /// No chunk follows: the syncer takes what is left and ends.
    pub fn close(&self) {
        self.open.lock().expect("open batch lock").closed = true;
        self.added.notify_one();
    }
}
