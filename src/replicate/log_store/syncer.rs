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
    pub fn run(self) {
        self.run_or(|e| {
            fatal::exit(&format!("qlog write or fsync failed, so no write of this batch can be answered: {e}"))
        })
    }

    /// As `run`, handing a failed write or fdatasync to `failed` and
    /// stopping there: the failed batch's callbacks are never called, so
    /// nothing of it is answered as durable.
    pub fn run_or(mut self, failed: impl FnOnce(std::io::Error)) {
        while let Some(batch) = self.open.take() {
            match self.sync(batch, false) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => return failed(e),
            }
        }
    }

    /// Writes and fdatasyncs `batch` (its logs side by side, or `in_turn`
    /// on this thread, in a fixed order), then hands it on: `false` once
    /// nobody takes batches any more. A failed write or fdatasync is
    /// answered, and no callback of the batch is called.
    pub fn sync(&mut self, mut batch: Batch<T>, in_turn: bool) -> std::io::Result<bool> {
        let started = Instant::now();
        let pending = std::mem::take(&mut batch.pending);
        if in_turn {
            pending.run_in_turn(&self.files, self.ledger.as_deref())?;
        } else {
            pending.run(&self.files, self.ledger.as_deref())?;
        }
        batch.bytes = pending.bytes();
        self.metrics.qlog_sync_seconds.inc_by(started.elapsed().as_secs_f64());
        Ok((self.on_durable)(batch))
    }
}
