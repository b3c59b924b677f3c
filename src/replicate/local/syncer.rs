//! The pipeline's second stage: makes each batch durable, one fdatasync per
//! touched log, then tells the sequencer it can take the next.

use super::{Batch, Msg};
use crate::fatal;
use crate::qlog::files::FileTable;
use crate::qlog::sync_ledger::SyncLedger;
use std::sync::mpsc;
use std::sync::Arc;

pub(super) struct Syncer {
    pub files: Arc<FileTable>,
    pub ledger: Option<Arc<SyncLedger>>,
    pub synced: mpsc::Sender<Msg>,
    pub next: mpsc::Sender<Batch>,
}

impl Syncer {
    pub fn run(self, rx: mpsc::Receiver<Batch>) {
        while let Ok(mut batch) = rx.recv() {
            let pending = std::mem::take(&mut batch.pending);
            pending.run(&self.files, self.ledger.as_deref()).unwrap_or_else(|e| {
                fatal::exit(&format!("qlog write or fsync failed, so no write of this batch can be answered: {e}"))
            });
            batch.bytes = pending.bytes();
            let _ = self.synced.send(Msg::Synced);
            if self.next.send(batch).is_err() {
                return;
            }
        }
    }
}
