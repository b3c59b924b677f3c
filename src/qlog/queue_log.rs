//! One log directory (`q<id>/`) as the planner's thread sees it: where the
//! next record will sit, the index of the active file, and the bytes and
//! file-system steps staged for the next group commit. The steps themselves
//! run later, on the thread that syncs (`pending_sync.rs`).

use super::boot_scan::scan_intact;
use super::files::{FileTable, Location};
use super::index_file;
use super::pending_sync::{LogWrite, Prepare};
use super::record::{frame_with, RecordKind, FRAME_HEADER};
use super::segment::{index_path, log_dir, segment_path, IndexRow};
use super::write_buffers;
use crate::log_id::LogId;
use crate::qlog::message_record::MessageSpan;
use crate::storage::read_verified;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct QueueLog {
    pub id: u64,
    dir: PathBuf,
    active_no: u32,
    /// Where the active file ends once every write handed off has landed.
    end: u64,
    /// The index of the active file, kept in RAM until it is sealed.
    active_rows: Vec<IndexRow>,
    staged: Vec<u8>,
    /// What the next write must do to the file system before its bytes.
    prepare: Vec<Prepare>,
    /// When the active file got its first record, on the writer's clock
    /// (this process's boot, 0, for a file it resumed): a file older than
    /// the seal age is sealed.
    first_record_us: Option<u64>,
}

impl QueueLog {
    /// A new log: its directory and first file are made by its first write.
    pub fn create(root: &Path, id: u64) -> Self {
        Self {
            id,
            dir: log_dir(root, id),
            active_no: 1,
            end: 0,
            active_rows: Vec::new(),
            staged: Vec::new(),
            prepare: vec![Prepare::CreateDir, Prepare::CreateSegment(1)],
            first_record_us: None,
        }
    }

    /// Continues an existing log whose active file recovery has verified;
    /// the file is opened by its first write (`FileTable::get`).
    pub fn resume(id: u64, dir: PathBuf, active_no: u32, active_len: u64, active_rows: Vec<IndexRow>) -> Self {
        let first_record_us = (active_len > 0).then_some(0);
        Self {
            id,
            dir,
            active_no,
            end: active_len,
            active_rows,
            staged: Vec::new(),
            prepare: Vec::new(),
            first_record_us,
        }
    }

    /// Seals the active file once it has reached `segment_bytes`, or holds a
    /// record older than `seal_age` (so that reclaim, which frees only sealed
    /// files, can reach it), and starts the next one. Called before the
    /// first record of a group commit, so the sealed file ends with the last
    /// write already handed off, and for idle logs (`QlogWriter::seal_idle`).
    /// Answers whether it rolled.
    pub fn roll_if_due(&mut self, segment_bytes: u64, seal_age: Duration, now_us: u64) -> bool {
        let old = self.first_record_us.is_some_and(|t| u128::from(now_us.saturating_sub(t)) >= seal_age.as_micros());
        if !self.staged.is_empty() || self.end == 0 || (self.end < segment_bytes && !old) {
            return false;
        }
        self.first_record_us = None;
        let qidx = index_file::encode(self.end, &self.active_rows);
        self.prepare.push(Prepare::Seal { segment: self.active_no, qidx });
        self.active_no += 1;
        self.prepare.push(Prepare::CreateSegment(self.active_no));
        self.end = 0;
        self.active_rows.clear();
        true
    }

    /// Adds one framed record, whose body `write_body` appends, to the next
    /// write at `now_us` on the writer's clock, and says where it will sit.
    pub fn stage(
        &mut self,
        write_body: impl FnOnce(&mut Vec<u8>),
        (id, span, timestamp_us): (LogId, Option<MessageSpan>, i64),
        now_us: u64,
    ) -> Location {
        let start = self.staged.len();
        let pos = self.end + start as u64;
        self.first_record_us.get_or_insert(now_us);
        frame_with(&mut self.staged, write_body);
        let frame_len = (self.staged.len() - start) as u32;
        let kind =
            RecordKind::from_byte(self.staged[start + FRAME_HEADER]).expect("the writer stages known record kinds");
        self.active_rows.push(IndexRow { pos, frame_len, kind, id, span, timestamp_us });
        Location { log: self.id, segment: self.active_no, pos, frame_len }
    }

    /// Cuts the log at byte `pos` of file `segment`, durably: later files
    /// go, and that file becomes the active one again (its `.qidx` goes,
    /// its rows are read back from what is left). Nothing may be staged,
    /// and every write handed off must have been synced.
    pub fn cut(&mut self, files: &FileTable, segment: u32, pos: u64) -> std::io::Result<()> {
        assert!(
            self.staged.is_empty() && self.prepare.is_empty(),
            "invariant broken: qlog {} was cut with records staged",
            self.id
        );
        let storage = files.storage();
        for no in segment + 1..=self.active_no {
            files.remove(self.id, no);
            let _ = storage.remove_file(&index_path(&self.dir, no));
            storage.remove_file(&segment_path(&self.dir, no))?;
        }
        let file = files
            .get(self.id, segment)?
            .ok_or_else(|| std::io::Error::other(format!("segment {segment} of qlog {} is not there", self.id)))?;
        file.truncate_durable(pos)?;
        if segment < self.active_no {
            let _ = storage.remove_file(&index_path(&self.dir, segment));
            let (_, scanned) = read_verified(storage, &segment_path(&self.dir, segment), scan_intact)?;
            let scanned = scanned.map_err(|e| std::io::Error::other(e.to_string()))?;
            if let Some(d) = scanned.damage {
                return Err(std::io::Error::other(format!(
                    "qlog {} segment {segment}: damaged at byte {}",
                    self.id, d.pos
                )));
            }
            let rows = scanned.rows;
            self.active_rows = rows;
            self.active_no = segment;
            storage.sync_dir(&self.dir)?;
        } else {
            self.active_rows.retain(|r| r.pos < pos);
        }
        self.end = pos;
        if pos == 0 {
            self.first_record_us = None;
        }
        Ok(())
    }

    /// Hands what is staged to a write of its own; the log's end moves past it.
    pub fn take_write(&mut self) -> LogWrite {
        // The next batch is likely as large as this one: reserving that
        // much saves it the copies of growing from empty, and a spare
        // buffer saves it the kernel's zeroing of fresh pages.
        let next = write_buffers::take(self.staged.len());
        let bytes = std::mem::replace(&mut self.staged, next);
        let write = LogWrite {
            log: self.id,
            dir: self.dir.clone(),
            segment: self.active_no,
            at: self.end,
            prepare: std::mem::take(&mut self.prepare),
            bytes,
        };
        self.end += write.bytes.len() as u64;
        write
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qlog::entry_record::Stub;

    fn stage_one(log: &mut QueueLog, index: u64) {
        let stub = Stub { id: LogId::new(1, index), home: 0, copies: 2, ordinal: 1, digest: [7; 16] }.encode();
        log.stage(|b| b.extend_from_slice(&stub), (LogId::new(1, index), None, 0), 0);
        log.take_write();
    }

    #[test]
    fn an_active_file_is_sealed_when_full_or_old_on_the_writers_clock_and_never_when_empty() {
        let ten_minutes = Duration::from_secs(600);
        let mut log = QueueLog::create(Path::new("unused"), 5);
        log.roll_if_due(1, Duration::ZERO, 0);
        assert_eq!(log.active_no, 1, "an empty file is never sealed");
        stage_one(&mut log, 1);
        log.roll_if_due(1 << 20, ten_minutes, 599_999_999);
        assert_eq!(log.active_no, 1, "neither full nor old: its first record is a microsecond short of ten minutes");
        log.roll_if_due(1 << 20, ten_minutes, 600_000_000);
        assert_eq!(log.active_no, 2, "its first record is as old as the seal age");
        stage_one(&mut log, 2);
        log.roll_if_due(1, ten_minutes, 600_000_001);
        assert_eq!(log.active_no, 3, "full");
    }
}
