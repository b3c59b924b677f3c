//! The file-system half of a group commit, detached from the writer so that
//! one thread makes batch N durable while another stages batch N+1: per
//! touched log, the steps its write needs first (a new directory, a sealed
//! file's index, a new file), then its bytes, then one fdatasync.

use super::files::{FileTable, LogFile};
use super::segment::{index_path, segment_path};
use super::sync_ledger::SyncLedger;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most threads that fdatasync the logs of one batch side by side.
const SYNC_THREADS: usize = 16;
/// The longest wait between two tries to open a qlog file, and how often
/// the wait is logged.
const MAX_OPEN_RETRY_WAIT: Duration = Duration::from_secs(1);
const STALL_WARN_EVERY: Duration = Duration::from_secs(10);

/// A step a log's write takes before its bytes.
#[derive(Debug)]
pub enum Prepare {
    /// The log is new: make its directory, durably.
    CreateDir,
    /// Write the index of a full file. The bytes it indexes were synced by
    /// an earlier write, and a stale or missing index is rebuilt at boot.
    Seal { segment: u32, qidx: Vec<u8> },
    /// Start the next file, durably, and let readers find it.
    CreateSegment(u32),
}

/// One log's part of a group commit.
#[derive(Debug)]
pub struct LogWrite {
    pub log: u64,
    pub dir: PathBuf,
    pub segment: u32,
    /// Where in the segment the bytes go.
    pub at: u64,
    pub prepare: Vec<Prepare>,
    pub bytes: Vec<u8>,
}

/// A write done (or dropped) hands its buffer to the next commit's staging.
impl Drop for LogWrite {
    fn drop(&mut self) {
        super::write_buffers::give(std::mem::take(&mut self.bytes));
    }
}

impl LogWrite {
    /// Takes the write's steps, then writes its bytes and fdatasyncs them.
    /// A step or an open that fails has written nothing, so it is retried
    /// (`FileTable::ready` refuses new commands meanwhile); a failed write or
    /// fdatasync is answered as an error, which the caller must stop on.
    fn run(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<()> {
        let file = self.prepare_retrying(files, ledger);
        file.write_all_at(&self.bytes, self.at)?;
        file.datasync()?;
        if let Some(l) = ledger {
            l.record(&segment_path(&self.dir, self.segment), self.at + self.bytes.len() as u64);
        }
        // `file` is let go of only now, synced: see `files.rs`.
        Ok(())
    }

    fn prepare_retrying(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> Arc<LogFile> {
        let mut wait = Duration::from_millis(10);
        let mut stalled_since: Option<Instant> = None;
        let mut warned: Option<Instant> = None;
        loop {
            match self.prepare(files, ledger) {
                Ok(file) => {
                    if let Some(since) = stalled_since {
                        files.set_stalled(false);
                        tracing::info!(
                            log = self.log,
                            waited_ms = since.elapsed().as_millis() as u64,
                            "a qlog file could be opened again; writes go on"
                        );
                    }
                    return file;
                }
                Err(e) => {
                    if stalled_since.is_none() {
                        stalled_since = Some(Instant::now());
                        files.set_stalled(true);
                    }
                    if warned.is_none_or(|t| t.elapsed() >= STALL_WARN_EVERY) {
                        warned = Some(Instant::now());
                        tracing::warn!(log = self.log, dir = %self.dir.display(), error = %e, "cannot open a qlog file; the write waits and new commands are refused until it can");
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(MAX_OPEN_RETRY_WAIT);
                }
            }
        }
    }

    /// The steps before the bytes, each safe to take again, and the file
    /// the bytes go to.
    fn prepare(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<Arc<LogFile>> {
        let storage = files.storage();
        for step in &self.prepare {
            match step {
                Prepare::CreateDir => {
                    storage.create_dir_all(&self.dir)?;
                    let root = self.dir.parent().expect("a log directory sits in the qlog root");
                    files.opening(|| storage.sync_dir(root))?;
                }
                Prepare::Seal { segment, qidx } => {
                    files.opening(|| storage.write(&index_path(&self.dir, *segment), qidx))?
                }
                Prepare::CreateSegment(no) => {
                    let path = segment_path(&self.dir, *no);
                    // Not a create that fails on an existing file: a try
                    // that failed after creating it left it empty, and this
                    // one goes on with it.
                    let file = files.opening(|| storage.open(&path, true))?;
                    files.opening(|| storage.sync_dir(&self.dir))?;
                    if let Some(l) = ledger {
                        l.record(&path, 0);
                    }
                    files.insert(self.log, *no, Arc::new(LogFile::new(file)));
                }
            }
        }
        files.get(self.log, self.segment)?.ok_or_else(|| {
            std::io::Error::other(format!("segment {} of qlog {} was never created", self.segment, self.log))
        })
    }
}

/// Every log write of one group commit.
#[derive(Debug, Default)]
pub struct PendingSync {
    pub writes: Vec<LogWrite>,
}

impl PendingSync {
    pub fn bytes(&self) -> u64 {
        self.writes.iter().map(|w| w.bytes.len() as u64).sum()
    }

    /// Writes and fdatasyncs every log in turn, on this thread: the order of
    /// every file operation is fixed, as the simulator needs to replay a
    /// seed bit for bit.
    pub fn run_in_turn(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<()> {
        self.writes.iter().try_for_each(|w| w.run(files, ledger))
    }

    /// Writes and fdatasyncs every log, side by side when there are several.
    /// An error (a failed write or fdatasync) leaves the logs in an unknown state: the caller must stop,
    /// and recovery decides at the next boot.
    pub fn run(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<()> {
        if self.writes.len() <= 1 {
            return self.run_in_turn(files, ledger);
        }
        let per_thread = self.writes.len().div_ceil(SYNC_THREADS);
        std::thread::scope(|s| {
            let handles: Vec<_> = self
                .writes
                .chunks(per_thread)
                .map(|chunk| s.spawn(move || chunk.iter().try_for_each(|w| w.run(files, ledger))))
                .collect();
            handles.into_iter().try_for_each(|h| h.join().expect("a qlog sync thread panicked"))
        })
    }
}
