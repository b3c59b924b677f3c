//! One log directory (`q<id>/`): its rolling files and the bytes staged for
//! the next group commit.

use super::durable_fs::{datasync, sync_dir};
use super::files::{FileTable, Location};
use super::index_file;
use super::record::{frame_into, RecordKind};
use super::segment::{index_path, segment_path, IndexRow};
use super::sync_ledger::SyncLedger;
use crate::log_id::LogId;
use crate::qlog::message_record::MessageSpan;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn log_dir(root: &Path, id: u64) -> PathBuf {
    root.join(format!("q{id}"))
}

pub struct QueueLog {
    pub id: u64,
    dir: PathBuf,
    active_no: u32,
    active: Arc<File>,
    /// Bytes of the active file that are written and synced.
    active_len: u64,
    /// The index of the active file, kept in RAM until it is sealed.
    active_rows: Vec<IndexRow>,
    staged: Vec<u8>,
}

impl QueueLog {
    /// Creates `q<id>/` with its first, empty file, durably.
    pub fn create(root: &Path, id: u64, files: &FileTable, ledger: Option<&SyncLedger>) -> std::io::Result<Self> {
        let dir = log_dir(root, id);
        std::fs::create_dir_all(&dir)?;
        sync_dir(root)?;
        let log = Self::start_segment(id, dir, 1, files, ledger)?;
        Ok(log)
    }

    /// Continues an existing log whose active file recovery has verified.
    pub fn resume(
        id: u64,
        dir: PathBuf,
        active_no: u32,
        active_len: u64,
        active_rows: Vec<IndexRow>,
        files: &FileTable,
    ) -> std::io::Result<Self> {
        let file = Arc::new(OpenOptions::new().read(true).write(true).open(segment_path(&dir, active_no))?);
        files.insert(id, active_no, file.clone());
        Ok(Self { id, dir, active_no, active: file, active_len, active_rows, staged: Vec::new() })
    }

    fn start_segment(
        id: u64,
        dir: PathBuf,
        no: u32,
        files: &FileTable,
        ledger: Option<&SyncLedger>,
    ) -> std::io::Result<Self> {
        let path = segment_path(&dir, no);
        let file = Arc::new(OpenOptions::new().read(true).write(true).create_new(true).open(&path)?);
        sync_dir(&dir)?;
        if let Some(l) = ledger {
            l.record(&path, 0);
        }
        files.insert(id, no, file.clone());
        Ok(Self { id, dir, active_no: no, active: file, active_len: 0, active_rows: Vec::new(), staged: Vec::new() })
    }

    /// Seals the active file once it has reached `segment_bytes` and starts the
    /// next one. Called only between group commits, when nothing is staged.
    pub fn roll_if_full(
        &mut self,
        segment_bytes: u64,
        files: &FileTable,
        ledger: Option<&SyncLedger>,
    ) -> std::io::Result<()> {
        if !self.staged.is_empty() || self.active_len < segment_bytes {
            return Ok(());
        }
        let qidx = index_file::encode(self.active_len, &self.active_rows);
        std::fs::write(index_path(&self.dir, self.active_no), qidx)?;
        *self = Self::start_segment(self.id, self.dir.clone(), self.active_no + 1, files, ledger)?;
        Ok(())
    }

    /// Adds one framed record to the next write and says where it will sit.
    pub fn stage(&mut self, body: &[u8], id: LogId, span: Option<MessageSpan>, timestamp_us: i64) -> Location {
        let pos = self.active_len + self.staged.len() as u64;
        frame_into(body, &mut self.staged);
        let frame_len = (self.active_len + self.staged.len() as u64 - pos) as u32;
        let kind = RecordKind::from_byte(body[0]).expect("the writer stages known record kinds");
        self.active_rows.push(IndexRow { pos, frame_len, kind, id, span, timestamp_us });
        Location { log: self.id, segment: self.active_no, pos, frame_len }
    }

    pub fn staged_len(&self) -> usize {
        self.staged.len()
    }

    /// Writes what is staged and fdatasyncs the file once.
    pub fn write_and_sync(&mut self, ledger: Option<&SyncLedger>) -> std::io::Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        self.active.write_all_at(&self.staged, self.active_len)?;
        datasync(&self.active)?;
        self.active_len += self.staged.len() as u64;
        self.staged.clear();
        if let Some(l) = ledger {
            l.record(&segment_path(&self.dir, self.active_no), self.active_len);
        }
        Ok(())
    }
}
