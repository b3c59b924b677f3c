//! The log store's append path: takes the open batch whenever it is free,
//! makes it durable with one fdatasync per touched log, and only then calls
//! back (openraft's `IOFlushed` has the same contract: the callback means
//! the entries survive a power cut).

use super::open_batch::OpenBatch;
use crate::fatal;
use crate::metrics::Metrics;
use crate::qlog::files::FileTable;
use crate::qlog::sync_ledger::SyncLedger;
use crate::replicate::batch::{Batch, Ticket};
use std::sync::Arc;
use std::time::Instant;

/// Called with each batch once every one of its records is fdatasynced;
/// `false` once nobody takes batches any more.
pub type OnDurable<T> = Box<dyn FnMut(Batch<T>) -> bool + Send>;

pub(crate) struct Syncer<T> {
    pub files: Arc<FileTable>,
    pub metrics: Arc<Metrics>,
    pub ledger: Option<Arc<SyncLedger>>,
    pub open: Arc<OpenBatch<T>>,
    pub on_durable: OnDurable<T>,
}

impl<T: Ticket> Syncer<T> {
    pub fn run(mut self) {
        while let Some(mut batch) = self.open.take() {
            let started = Instant::now();
            let pending = std::mem::take(&mut batch.pending);
            pending.run(&self.files, self.ledger.as_deref()).unwrap_or_else(|e| {
                fatal::exit(&format!("qlog write or fsync failed, so no write of this batch can be answered: {e}"))
            });
            batch.bytes = pending.bytes();
            self.metrics.qlog_sync_seconds.inc_by(started.elapsed().as_secs_f64());
            if !(self.on_durable)(batch) {
                return;
            }
        }
    }
}
