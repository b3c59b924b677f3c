//! The pipeline's second stage: takes the open batch whenever it is free,
//! makes it durable with one fdatasync per touched log, and passes it on.

use super::open_batch::OpenBatch;
use super::Batch;
use crate::fatal;
use crate::metrics::Metrics;
use crate::qlog::files::FileTable;
use crate::qlog::sync_ledger::SyncLedger;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

pub(super) struct Syncer {
    pub files: Arc<FileTable>,
    pub metrics: Arc<Metrics>,
    pub ledger: Option<Arc<SyncLedger>>,
    pub open: Arc<OpenBatch>,
    pub next: mpsc::Sender<Batch>,
}

impl Syncer {
    pub fn run(self) {
        while let Some(mut batch) = self.open.take() {
            let started = Instant::now();
            let pending = std::mem::take(&mut batch.pending);
            pending.run(&self.files, self.ledger.as_deref()).unwrap_or_else(|e| {
                fatal::exit(&format!("qlog write or fsync failed, so no write of this batch can be answered: {e}"))
            });
            batch.bytes = pending.bytes();
            self.metrics.qlog_sync_seconds.inc_by(started.elapsed().as_secs_f64());
            if self.next.send(batch).is_err() {
                return;
            }
        }
    }
}
