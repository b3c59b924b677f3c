//! The file-system half of a group commit, detached from the writer so that
//! one thread makes batch N durable while another stages batch N+1: per
//! touched log, the steps its write needs first (a new directory, a sealed
//! file's index, a new file), then its bytes, then one fdatasync.

use super::durable_fs::{datasync, sync_dir};
use super::files::FileTable;
use super::segment::{index_path, segment_path};
use super::sync_ledger::SyncLedger;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// The most threads that fdatasync the logs of one batch side by side.
const SYNC_THREADS: usize = 16;

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

impl LogWrite {
    fn run(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<()> {
        for step in &self.prepare {
            match step {
                Prepare::CreateDir => {
                    std::fs::create_dir_all(&self.dir)?;
                    sync_dir(self.dir.parent().expect("a log directory sits in the qlog root"))?;
                }
                Prepare::Seal { segment, qidx } => std::fs::write(index_path(&self.dir, *segment), qidx)?,
                Prepare::CreateSegment(no) => {
                    let path = segment_path(&self.dir, *no);
                    let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
                    sync_dir(&self.dir)?;
                    if let Some(l) = ledger {
                        l.record(&path, 0);
                    }
                    files.insert(self.log, *no, Arc::new(file));
                }
            }
        }
        let file = files.get(self.log, self.segment).ok_or_else(|| {
            std::io::Error::other(format!("segment {} of qlog {} was never created", self.segment, self.log))
        })?;
        file.write_all_at(&self.bytes, self.at)?;
        datasync(&file)?;
        if let Some(l) = ledger {
            l.record(&segment_path(&self.dir, self.segment), self.at + self.bytes.len() as u64);
        }
        Ok(())
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

    /// Writes and fdatasyncs every log, side by side when there are several.
    /// Any error leaves the logs in an unknown state: the caller must stop,
    /// and recovery decides at the next boot.
    pub fn run(&self, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<()> {
        if self.writes.len() <= 1 {
            return self.writes.iter().try_for_each(|w| w.run(files, ledger));
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
