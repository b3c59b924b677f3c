//! The storage seam: every file operation of the qlog, its layout files and
//! recovery goes through [`Storage`], so the same code runs on the operating
//! system's files (`os.rs`) and on simulated ones that lose unsynced bytes,
//! tear writes and fail on command (the simulator's, `tests/sim/storage.rs`),
//! the way redb's crash-simulating backend and FoundationDB's simulator test
//! theirs.
//!
//! The LMDB checkpoint is not behind the seam: heed owns its file. A
//! snapshot carries a copy of it among files that are (`import`, `export`).

pub mod os;

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One open file, read and written at positions (never through a cursor, so
/// readers and the writer share it).
pub trait StorageFile: Send + Sync + Debug {
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<()>;
    /// The `len` bytes at `pos`, in a buffer of their own. A file may read
    /// them without first zeroing the buffer, which a fetch's large reads
    /// paid a tenth of their time for.
    fn read_vec_at(&self, len: usize, pos: u64) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, pos)?;
        Ok(buf)
    }
    fn write_all_at(&self, bytes: &[u8], pos: u64) -> std::io::Result<()>;
    /// fdatasync: the file's bytes, and the size that reaches them.
    fn datasync(&self) -> std::io::Result<()>;
    /// Cuts (or extends) the file to `len` bytes and syncs that.
    fn truncate_durable(&self, len: u64) -> std::io::Result<()>;
    /// The operating system's descriptor, for a fetch that has the kernel
    /// send the file's bytes to a socket (`sendfile`); a simulated file has
    /// none and is read instead.
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// A name in a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
}

impl DirEntry {
    pub fn path(&self, dir: &Path) -> PathBuf {
        dir.join(&self.name)
    }
}

/// Something a file table holds back so that the writer always has a file
/// to spend when the process runs out of descriptors (`qlog/files.rs`).
pub type Reserve = Box<dyn Send + Sync>;

/// The file system as the qlog sees it. A directory entry (a created,
/// renamed or removed file) survives a power cut only once `sync_dir` of its
/// directory returned; a file's bytes only once its `datasync` returned.
pub trait Storage: Send + Sync + Debug {
    /// Opens `path` to read and write; `create` makes it, empty, when absent.
    fn open(&self, path: &Path, create: bool) -> std::io::Result<Arc<dyn StorageFile>>;
    /// The whole contents of `path`.
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// Makes `path` hold `bytes`, replacing it; not synced.
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()>;
    /// Makes `path` hold `bytes` and syncs its contents (not its directory entry).
    fn write_durable(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()>;
    fn len(&self, path: &Path) -> std::io::Result<u64>;
    fn exists(&self, path: &Path) -> bool;
    /// Renames a file, or a directory with everything under it.
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()>;
    fn remove_file(&self, path: &Path) -> std::io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> std::io::Result<()>;
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()>;
    /// The names in `dir`, in no order.
    fn list(&self, dir: &Path) -> std::io::Result<Vec<DirEntry>>;
    /// Syncs a directory, so the entries created in it survive a power cut.
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()>;
    /// Holds back one descriptor (or nothing, where there are none to run out of).
    fn reserve(&self, dir: &Path) -> Option<Reserve>;
    /// Copies `from` to the new file `to` and syncs its bytes (not its
    /// directory entry); answers the bytes copied.
    fn copy_durable(&self, from: &Path, to: &Path) -> std::io::Result<u64>;
    /// Takes in `outside`, a file written outside the seam (heed's copy of
    /// the store checkpoint, for a snapshot), as `path`, its bytes synced;
    /// `outside` is gone after.
    fn import(&self, outside: &Path, path: &Path) -> std::io::Result<()>;
    /// Puts `path` out of the seam at `outside` (a snapshot's checkpoint,
    /// for heed to open), replacing what is there, synced with its
    /// directory entry; `path` is gone after.
    fn export(&self, path: &Path, outside: &Path) -> std::io::Result<()>;
}

/// Creates the directory `dir` and every missing parent, each new one's
/// entry made durable in its parent: a power cut after this keeps the whole
/// path. A raft group's directory (`groups/g1/`) needs it, since nothing
/// else syncs the directories above the group's own.
pub fn create_dir_durable(storage: &dyn Storage, dir: &Path) -> std::io::Result<()> {
    let mut new = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at.filter(|p| !p.as_os_str().is_empty() && !storage.exists(p)) {
        new.push(path);
        at = path.parent();
    }
    storage.create_dir_all(dir)?;
    for parent in new.iter().filter_map(|p| p.parent()) {
        storage.sync_dir(parent)?;
    }
    Ok(())
}

/// Removes the directory `dir` and everything under it, answering success
/// when it was not there.
pub fn remove_tree(storage: &dyn Storage, dir: &Path) -> std::io::Result<()> {
    let entries = match storage.list(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        entries => entries?,
    };
    for entry in entries {
        let path = entry.path(dir);
        if entry.is_dir {
            remove_tree(storage, &path)?;
        } else {
            remove_if_there(storage, &path)?;
        }
    }
    storage.remove_dir(dir)
}

/// Every file under `dir`, relative to it, in no order.
pub fn files_under(storage: &dyn Storage, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for entry in storage.list(&dir.join(&rel))? {
            let path = rel.join(&entry.name);
            if entry.is_dir {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    Ok(out)
}

/// Removes `path`, answering success when it was not there.
pub fn remove_if_there(storage: &dyn Storage, path: &Path) -> std::io::Result<()> {
    match storage.remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Replaces the small file `path` with `bytes` so that a crash leaves the
/// old content or the new, never a torn one: the bytes go to `<path>.tmp`,
/// which is synced and renamed over `path`, and the directory is synced.
pub fn replace_durable(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    storage.write_durable(&tmp, bytes)?;
    storage.rename(&tmp, path)?;
    storage.sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Reads `path` and checks it with `check`, which answers what it made of
/// the bytes and whether they verify; a read that does not verify is read
/// again, at most three reads in all. A bit flipped on the way from the disk
/// (a bus, a controller, memory) differs from one read to the next, while
/// damage on the medium, a torn tail included, reads back the same: so a
/// read that does not verify is taken as the file's own once a second read
/// returns the same bytes. Answers the bytes kept and what `check` made of
/// them, so the caller never checks them a second time.
pub fn read_verified<T>(
    storage: &dyn Storage,
    path: &Path,
    check: impl Fn(&[u8]) -> (T, bool),
) -> std::io::Result<(Vec<u8>, T)> {
    let mut bytes = storage.read(path)?;
    let (mut checked, mut verified) = check(&bytes);
    for _ in 0..2 {
        if verified {
            break;
        }
        let again = storage.read(path)?;
        if again == bytes {
            break;
        }
        (checked, verified) = check(&again);
        bytes = again;
    }
    Ok((bytes, checked))
}

/// The most reads `read_settled` makes of one file.
const SETTLE_READS: usize = 5;

/// Reads a small file until one content has come back twice, for files with
/// no checksum of their own (the layout's): see [`read_verified`]. A flip
/// on the way differs from read to read, so two reads that agree are the
/// file's bytes; a third read alone is not (the simulator found a boot that
/// took one flipped read over the good one it had: seed 8094). After
/// `SETTLE_READS` reads with no two alike the last one is answered, for the
/// caller's own check to refuse.
pub fn read_settled(storage: &dyn Storage, path: &Path) -> std::io::Result<Vec<u8>> {
    let mut seen: Vec<Vec<u8>> = Vec::with_capacity(SETTLE_READS);
    for _ in 0..SETTLE_READS {
        let bytes = storage.read(path)?;
        if seen.contains(&bytes) {
            return Ok(bytes);
        }
        seen.push(bytes);
    }
    Ok(seen.pop().expect("at least one read"))
}
