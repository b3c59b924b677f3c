//! The group commit being gathered, shared by the sequencer, which adds each
//! planned chunk to it, and the syncer, which takes it whole the moment it
//! is free. Taking it is the syncer's own step, not a hand-off from the
//! sequencer, so a finished fdatasync is followed by the next write without
//! waiting for another thread to be scheduled.

use crate::qlog::entry_index::EntryLocations;
use crate::qlog::files::FileTable;
use crate::qlog::writer::{EntryWrite, QlogWriter};
use crate::replicate::batch::{Batch, Ticket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// The most commands one group commit takes: past it the sequencer waits for
/// the syncer, so a slow disk cannot grow one batch (and the applier's hold
/// of the store's lock) without bound.
const MAX_BATCH: usize = 16384;

pub(crate) struct OpenBatch<T> {
    open: Mutex<Open<T>>,
    /// Signalled when a chunk is added or the batch is closed.
    added: Condvar,
    /// Signalled when the syncer takes the batch.
    taken: Condvar,
    /// Signalled when the syncer comes back for more, having synced
    /// everything it took.
    synced: Condvar,
    /// The log forgets where the entries up to it sit: on one node the
    /// applied index of the last committed checkpoint, under raft the index
    /// openraft purged through.
    purge_to: Arc<AtomicU64>,
}

struct Open<T> {
    /// Holds the batch's records, staged as each chunk is added.
    writer: QlogWriter,
    batch: Option<Batch<T>>,
    closed: bool,
    /// How many batches the syncer has taken, and how many it has synced.
    batches_taken: u64,
    batches_synced: u64,
}

impl<T: Ticket> OpenBatch<T> {
    pub fn new(writer: QlogWriter, purge_to: Arc<AtomicU64>) -> Self {
        Self {
            open: Mutex::new(Open { writer, batch: None, closed: false, batches_taken: 0, batches_synced: 0 }),
            added: Condvar::new(),
            taken: Condvar::new(),
            synced: Condvar::new(),
            purge_to,
        }
    }

    /// Adds a chunk and stages the records of its entries. Their log ids
    /// follow the last ones staged, index by index: the entry index refuses
    /// anything else.
    pub fn add(&self, items: Vec<T>) {
        // Encoded before the lock, so the syncer waits for the copy only.
        let effects: Vec<_> = items.iter().flat_map(|t| t.entries().iter().map(|e| e.body.encode())).collect();
        let mut open = self.open.lock().expect("open batch lock");
        while open.batch.as_ref().is_some_and(|b| b.items.len() >= MAX_BATCH) {
            open = self.taken.wait(open).expect("open batch lock");
        }
        let Open { writer, batch, .. } = &mut *open;
        let batch = batch.get_or_insert_with(Batch::default);
        let entries = items.iter().flat_map(|t| t.entries());
        for (e, effects) in entries.zip(effects) {
            let write = EntryWrite { id: e.id, leader: e.leader, effects, queues: e.queues(), messages: &e.messages };
            batch.locations.push(writer.stage(&write));
        }
        batch.items.extend(items);
        drop(open);
        self.added.notify_one();
    }

    /// Where the records of entry `index` sit, while the log holds it.
    pub fn locations(&self, index: u64) -> Option<EntryLocations> {
        self.open.lock().expect("open batch lock").writer.index().get(index).cloned()
    }

    /// The last index the log holds, and its purge watermark.
    pub fn bounds(&self) -> (u64, u64) {
        let open = self.open.lock().expect("open batch lock");
        (open.writer.index().last_index(), open.writer.index().purged())
    }

    /// Cuts the log after entry `index` (raft's `truncate_after`), once
    /// every batch staged before is synced: a cut never races a write.
    /// Answers how many entries were cut.
    pub fn truncate_after(&self, index: u64, files: &FileTable) -> std::io::Result<usize> {
        let mut open = self.open.lock().expect("open batch lock");
        while open.batch.is_some() || open.batches_synced < open.batches_taken {
            self.added.notify_one();
            open = self.synced.wait(open).expect("open batch lock");
        }
        open.writer.truncate_after(index, files)
    }

    /// Forgets where the entries through `index` sit, now (raft's purge).
    pub fn purge_through(&self, index: u64) {
        self.open.lock().expect("open batch lock").writer.purge_through(index);
    }

    /// Starts the log after `index` when it holds nothing past its purge
    /// watermark (raft's first append after a snapshot, or on an empty log
    /// that openraft starts further on).
    pub fn start_after(&self, index: u64) {
        let mut open = self.open.lock().expect("open batch lock");
        let log = open.writer.index();
        if log.last_index() == log.purged() && index > log.purged() {
            open.writer.purge_through(index);
        }
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
    pub fn take(&self) -> Option<Batch<T>> {
        self.take_when(true)
    }

    /// As `take`, without waiting for a batch: `None` when nothing is
    /// gathered (the syncer's step, where the caller drives it).
    pub fn try_take(&self) -> Option<Batch<T>> {
        self.take_when(false)
    }

    fn take_when(&self, wait: bool) -> Option<Batch<T>> {
        let mut open = self.open.lock().expect("open batch lock");
        // The syncer comes back only once it has finished what it took.
        open.batches_synced = open.batches_taken;
        open.writer.batches_synced(open.batches_taken);
        open.writer.purge_through(self.purge_to.load(Ordering::Acquire));
        self.synced.notify_all();
        loop {
            if let Some(mut batch) = open.batch.take() {
                open.batches_taken += 1;
                batch.pending = open.writer.take_pending();
                drop(open);
                self.taken.notify_one();
                return Some(batch);
            }
            if open.closed || !wait {
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
