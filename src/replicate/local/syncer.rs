//! The pipeline's second stage: makes each batch durable, one fdatasync per
//! touched log, then tells the sequencer it can take the next.

use super::{Batch, Msg};
use crate::fatal;
use crate::metrics::Metrics;
use crate::qlog::files::FileTable;
use crate::qlog::sync_ledger::SyncLedger;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

pub(super) struct Syncer {
    pub files: Arc<FileTable>,
    pub metrics: Arc<Metrics>,
    pub ledger: Option<Arc<SyncLedger>>,
    /// Set once a batch is durable, before the wake-up goes to the sequencer.
    pub free: Arc<AtomicBool>,
    pub synced: mpsc::Sender<Msg>,
    pub next: mpsc::Sender<Batch>,
}

impl Syncer {
    pub fn run(self, rx: mpsc::Receiver<Batch>) {
        while let Ok(mut batch) = rx.recv() {
            let started = Instant::now();
            let pending = std::mem::take(&mut batch.pending);
            pending.run(&self.files, self.ledger.as_deref()).unwrap_or_else(|e| {
                fatal::exit(&format!("qlog write or fsync failed, so no write of this batch can be answered: {e}"))
            });
            batch.bytes = pending.bytes();
            self.metrics.qlog_sync_seconds.inc_by(started.elapsed().as_secs_f64());
            self.free.store(true, Ordering::Release);
            let _ = self.synced.send(Msg::Synced);
            if self.next.send(batch).is_err() {
                return;
            }
        }
    }
}
