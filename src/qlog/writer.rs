//! The group commit on the qlog side: every entry of a batch goes into every
//! log it touches (message records first, then the entry record or its stub),
//! and each touched log is written and fdatasynced once for the whole batch.

use super::entry_record::{EntryRecord, Stub};
use super::files::{FileTable, Location};
use super::layout::{Layout, SYSTEM_LOG};
use super::message_record::MessageRecord;
use super::queue_log::QueueLog;
use super::sync_ledger::SyncLedger;
use crate::log_id::LogId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The most threads that fdatasync the logs of one batch side by side.
const SYNC_THREADS: usize = 16;

/// One entry as the writer receives it.
pub struct EntryWrite<'a> {
    pub id: LogId,
    /// The planner's encoded effects.
    pub effects: Vec<u8>,
    /// Every queue the entry touches, messages or not.
    pub queues: Vec<u64>,
    pub messages: &'a [MessageRecord],
}

pub struct QlogWriter {
    root: PathBuf,
    layout: Layout,
    logs: BTreeMap<u64, QueueLog>,
    files: Arc<FileTable>,
    segment_bytes: u64,
    ledger: Option<Arc<SyncLedger>>,
    /// Bytes written since the writer started, for metrics and checkpoints.
    pub bytes_written: u64,
}

impl QlogWriter {
    pub fn new(
        root: PathBuf,
        layout: Layout,
        logs: Vec<QueueLog>,
        files: Arc<FileTable>,
        segment_bytes: u64,
        ledger: Option<Arc<SyncLedger>>,
    ) -> Self {
        let logs = logs.into_iter().map(|l| (l.id, l)).collect();
        Self { root, layout, logs, files, segment_bytes, ledger, bytes_written: 0 }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The logs an entry touching `queues` is written into, ascending.
    pub fn touched_logs(&self, queues: &[u64]) -> Vec<u64> {
        let set: BTreeSet<u64> = queues.iter().map(|q| self.layout.log_of(*q)).collect();
        if set.is_empty() {
            vec![SYSTEM_LOG]
        } else {
            set.into_iter().collect()
        }
    }

    /// Writes and syncs a batch; answers, per entry, the location of each of
    /// its message records. Any error leaves the logs in an unknown state: the
    /// caller must stop, and recovery decides at the next boot.
    pub fn write_batch(&mut self, batch: &[EntryWrite<'_>]) -> std::io::Result<Vec<Vec<Location>>> {
        let mut locations = Vec::with_capacity(batch.len());
        for entry in batch {
            let touched = self.touched_logs(&entry.queues);
            let body = EntryRecord { id: entry.id, touched: touched.clone(), effects: entry.effects.clone() }.encode();
            let digest = EntryRecord::digest(&body);
            let mut locs = vec![None; entry.messages.len()];
            for (ordinal, log_id) in touched.iter().enumerate() {
                self.open_log(*log_id)?;
                let layout = &self.layout;
                let log = self.logs.get_mut(log_id).expect("opened above");
                for (i, m) in entry.messages.iter().enumerate() {
                    if layout.log_of(m.span.queue) == *log_id {
                        locs[i] = Some(log.stage(&m.encode(), entry.id, Some(m.span), m.timestamp_us));
                    }
                }
                if ordinal == 0 {
                    log.stage(&body, entry.id, None, 0);
                } else {
                    let stub = Stub {
                        id: entry.id,
                        home: touched[0],
                        copies: touched.len() as u32,
                        ordinal: ordinal as u32,
                        digest,
                    };
                    log.stage(&stub.encode(), entry.id, None, 0);
                }
            }
            locations.push(locs.into_iter().map(|l| l.expect("every message's queue is touched")).collect());
        }
        self.sync_staged()?;
        Ok(locations)
    }

    /// Creates the log `id` on first use, and rolls it when its active file is full.
    fn open_log(&mut self, id: u64) -> std::io::Result<()> {
        if !self.logs.contains_key(&id) {
            let log = QueueLog::create(&self.root, id, &self.files, self.ledger.as_deref())?;
            self.logs.insert(id, log);
        }
        let log = self.logs.get_mut(&id).expect("inserted above");
        log.roll_if_full(self.segment_bytes, &self.files, self.ledger.as_deref())
    }

    fn sync_staged(&mut self) -> std::io::Result<()> {
        let ledger = self.ledger.as_deref();
        let mut staged: Vec<&mut QueueLog> = self.logs.values_mut().filter(|l| l.staged_len() > 0).collect();
        self.bytes_written += staged.iter().map(|l| l.staged_len() as u64).sum::<u64>();
        if staged.len() <= 1 {
            for log in staged {
                log.write_and_sync(ledger)?;
            }
            return Ok(());
        }
        let per_thread = staged.len().div_ceil(SYNC_THREADS);
        std::thread::scope(|s| {
            let handles: Vec<_> = staged
                .chunks_mut(per_thread)
                .map(|chunk| s.spawn(move || chunk.iter_mut().try_for_each(|log| log.write_and_sync(ledger))))
                .collect();
            handles.into_iter().try_for_each(|h| h.join().expect("a qlog sync thread panicked"))
        })
    }
}
