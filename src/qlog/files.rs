//! The qlog files readers and the writer share, as a bounded set of open
//! descriptors: at most `QUEEN_QLOG_OPEN_FILES` stay open, the least
//! recently used is closed to make room, and a file that is not open is
//! opened again by its path when it is next needed. Reads use positioned
//! reads, so they never move a cursor the writer depends on.
//!
//! Durability: a descriptor is closed when its last holder lets go, never
//! while bytes written through it wait for their fdatasync. Whoever writes
//! holds the file (an `Arc`) from its write through its fdatasync
//! (`pending_sync.rs`), so the table dropping its own copy closes nothing
//! early; `LogFile`'s drop asserts it.

use super::record::{read_frame, Frame, FRAME_HEADER};
use super::segment::log_dir;
use super::segment::segment_path;
use crate::storage::{Reserve, Storage, StorageFile};
use bytes::Bytes;
use lru::LruCache;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Where a record sits: which log, which segment, which bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub log: u64,
    pub segment: u32,
    pub pos: u64,
    pub frame_len: u32,
}

/// One open qlog file, and how many bytes written through it still wait
/// for their fdatasync.
#[derive(Debug)]
pub struct LogFile {
    file: Arc<dyn StorageFile>,
    unsynced: AtomicU64,
}

impl LogFile {
    pub fn new(file: Arc<dyn StorageFile>) -> Self {
        Self { file, unsynced: AtomicU64::new(0) }
    }

    pub fn read_vec_at(&self, len: usize, pos: u64) -> std::io::Result<Vec<u8>> {
        self.file.read_vec_at(len, pos)
    }

    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.raw_fd()
    }

    /// Writes `bytes` at `at`; they count as unsynced until `datasync`.
    pub fn write_all_at(&self, bytes: &[u8], at: u64) -> std::io::Result<()> {
        self.unsynced.fetch_add(bytes.len() as u64, Ordering::AcqRel);
        self.file.write_all_at(bytes, at)
    }

    /// Cuts the file to `len` bytes, durably. Only a file with nothing
    /// waiting for its fdatasync is cut: a write in flight would land past
    /// the cut, or be cut after it was answered.
    pub fn truncate_durable(&self, len: u64) -> std::io::Result<()> {
        assert_eq!(
            self.unsynced.load(Ordering::Acquire),
            0,
            "invariant broken: a qlog file was cut while bytes written to it wait for their fdatasync"
        );
        self.file.truncate_durable(len)
    }

    /// fdatasync: the file's bytes and the size that reaches them, without
    /// the timestamps a full fsync would also write.
    pub fn datasync(&self) -> std::io::Result<()> {
        let written = self.unsynced.load(Ordering::Acquire);
        self.file.datasync()?;
        self.unsynced.fetch_sub(written, Ordering::AcqRel);
        Ok(())
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        // A failed write or fdatasync ends the process before any drop, so
        // a file closed with unsynced bytes is a bug in who holds it.
        assert_eq!(
            *self.unsynced.get_mut(),
            0,
            "a qlog file was closed with bytes written through it that were never fdatasynced"
        );
    }
}

pub struct FileTable {
    root: PathBuf,
    storage: Arc<dyn Storage>,
    open: Mutex<LruCache<(u64, u32), Arc<LogFile>>>,
    /// One descriptor held back for the writer: given up when an open finds
    /// the process out of descriptors with nothing left to close, so the
    /// write that needs it goes on; until it is taken back, new commands
    /// are refused (`ready`).
    reserve: Mutex<Option<Reserve>>,
    /// How many of the writer's threads wait for a file they cannot open.
    stalled: AtomicUsize,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("qlog segment {segment} of log {log} is not there")]
    NotOpen { log: u64, segment: u32 },
    #[error("reading the qlog: {0}")]
    Io(#[from] std::io::Error),
    #[error("the record at byte {pos} of segment {segment} of log {log} fails its checksum")]
    Corrupt { log: u64, segment: u32, pos: u64 },
}

/// Whether an error says the process, or the system, has no descriptor to give.
pub fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

impl FileTable {
    /// A table of the files under the qlog `root` on `storage`, keeping at
    /// most `capacity` of them open.
    pub fn new(root: PathBuf, capacity: usize, storage: Arc<dyn Storage>) -> Self {
        let capacity = std::num::NonZeroUsize::new(capacity.max(1)).expect("at least one");
        let reserve = storage.reserve(&root);
        Self {
            root,
            storage,
            open: Mutex::new(LruCache::new(capacity)),
            reserve: Mutex::new(reserve),
            stalled: AtomicUsize::new(0),
        }
    }

    /// The storage every qlog file operation goes through.
    pub fn storage(&self) -> &dyn Storage {
        &*self.storage
    }

    pub fn path(&self, log: u64, segment: u32) -> PathBuf {
        segment_path(&log_dir(&self.root, log), segment)
    }

    /// Makes `file` the open file of (`log`, `segment`): a new file, or a
    /// rewritten one that replaces it.
    pub fn insert(&self, log: u64, segment: u32, file: Arc<LogFile>) {
        self.open.lock().expect("file table lock").put((log, segment), file);
    }

    /// Forgets a file reclaim freed; a read already holding it finishes.
    pub fn remove(&self, log: u64, segment: u32) {
        self.open.lock().expect("file table lock").pop(&(log, segment));
    }

    /// The file, opened again by its path when it is not open; `None` when
    /// it is not there (reclaim removed it).
    pub fn get(&self, log: u64, segment: u32) -> std::io::Result<Option<Arc<LogFile>>> {
        if let Some(file) = self.open.lock().expect("file table lock").get(&(log, segment)) {
            return Ok(Some(file.clone()));
        }
        let path = self.path(log, segment);
        let file = match self.opening(|| self.storage.open(&path, false)) {
            Ok(f) => Arc::new(LogFile::new(f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // Another thread may have opened it meanwhile: keep the first.
        let mut open = self.open.lock().expect("file table lock");
        Ok(Some(open.get_or_insert((log, segment), || file).clone()))
    }

    /// Runs `open`, which takes a descriptor; when the process has none
    /// left, closes the least recently used half of the open files (and,
    /// with none left to close, the reserve) and tries again.
    pub fn opening<T>(&self, mut open: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
        loop {
            match open() {
                Err(e) if out_of_descriptors(&e) => {
                    if !self.close_some() {
                        return Err(e);
                    }
                }
                other => return other,
            }
        }
    }

    /// Closes half of the open files, least recently used first, or else
    /// gives up the reserve; answers whether it let go of anything.
    fn close_some(&self) -> bool {
        let mut open = self.open.lock().expect("file table lock");
        let half = open.len().div_ceil(2);
        for _ in 0..half {
            open.pop_lru();
        }
        drop(open);
        half > 0 || self.reserve.lock().expect("file table lock").take().is_some()
    }

    /// Whether the writer can take new commands: it is not waiting for a
    /// file it cannot open, and the reserve descriptor is held (taken back
    /// here once descriptors are free again).
    pub fn ready(&self) -> bool {
        if self.stalled.load(Ordering::Acquire) > 0 {
            return false;
        }
        let mut reserve = self.reserve.lock().expect("file table lock");
        if reserve.is_none() {
            *reserve = self.storage.reserve(&self.root);
        }
        reserve.is_some()
    }

    /// One of the writer's threads starts (`true`) or stops waiting for a
    /// file it cannot open.
    pub fn set_stalled(&self, stalled: bool) {
        if stalled {
            self.stalled.fetch_add(1, Ordering::AcqRel);
        } else {
            self.stalled.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// What the death of the process does to its open files: they go with
    /// their unsynced bytes as they are, which the drop's check would take
    /// for a bug in who holds them. For the simulator, which drops a node
    /// where a real one exits.
    pub fn abandon(&self) {
        for (_, file) in self.open.lock().expect("file table lock").iter() {
            file.unsynced.store(0, Ordering::Release);
        }
    }

    /// The verified body of the record at `loc`. A record that fails its
    /// checksum is read again, up to three reads, before it counts as
    /// damaged: a bit flipped on the way from the disk is not there the next
    /// time (`storage::read_verified`).
    pub fn read_body(&self, loc: Location) -> Result<Bytes, ReadError> {
        let file = self.get(loc.log, loc.segment)?.ok_or(ReadError::NotOpen { log: loc.log, segment: loc.segment })?;
        for _ in 0..3 {
            let frame = file.read_vec_at(loc.frame_len as usize, loc.pos)?;
            if let Frame::Valid { next, .. } = read_frame(&frame, 0) {
                if next == frame.len() {
                    // The body is handed on as a slice of the frame read, not copied.
                    return Ok(Bytes::from(frame).slice(FRAME_HEADER..next));
                }
            }
        }
        Err(ReadError::Corrupt { log: loc.log, segment: loc.segment, pos: loc.pos })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::os::OsStorage;

    #[test]
    fn at_most_capacity_files_stay_open_and_a_closed_one_opens_again_by_its_path() {
        let root = tempfile::tempdir().unwrap();
        let table = FileTable::new(root.path().to_path_buf(), 2, OsStorage::shared());
        for log in 1..=3 {
            std::fs::create_dir_all(log_dir(root.path(), log)).unwrap();
            std::fs::write(table.path(log, 1), [log as u8; 4]).unwrap();
            assert!(table.get(log, 1).unwrap().is_some());
        }
        assert_eq!(table.open.lock().unwrap().len(), 2, "the least recently used was closed");
        assert!(!table.open.lock().unwrap().contains(&(1, 1)));
        let byte = table.get(1, 1).unwrap().unwrap().read_vec_at(1, 0).unwrap();
        assert_eq!(byte, [1], "opened again by its path");
        assert!(table.get(9, 1).unwrap().is_none(), "a file that is not there");
    }

    #[test]
    fn a_file_written_and_synced_closes_and_one_left_unsynced_is_caught() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("f");
        let file = LogFile::new(OsStorage.open(&path, true).unwrap());
        file.write_all_at(b"abc", 0).unwrap();
        file.datasync().unwrap();
        drop(file);
        let unsynced = LogFile::new(OsStorage.open(&path, false).unwrap());
        unsynced.write_all_at(b"d", 3).unwrap();
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(unsynced)));
        assert!(dropped.is_err(), "closing a file with unsynced bytes asserts");
    }
}
