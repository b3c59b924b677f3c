//! A data directory belongs to one process at a time. Two nodes on one
//! directory would interleave records in the same queue logs, and each would
//! cut the other's records as a torn tail at its next boot. `flock` on the
//! directory's `LOCK` file holds it for the life of the process; the kernel
//! lets go when the process dies, kill -9 included, so a crash never leaves a
//! stale lock behind, and the pid written into the file names the holder.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "LOCK";

/// Held while the node runs; dropping it (or the process ending) unlocks.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum DataDirLockError {
    #[error(
        "data directory {dir} is in use by another queen process (pid {pid}): stop that node, or give this one its own QUEEN_RAFT_DIR"
    )]
    Held { dir: PathBuf, pid: String },
    #[error("{path}: cannot open or lock the data directory's lock file: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

impl DataDirLock {
    /// Locks `dir` (which exists) for this process, or answers who holds it.
    pub fn acquire(dir: &Path) -> Result<Self, DataDirLockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| DataDirLockError::Io { path: path.clone(), source };
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = match pid.trim() {
                    "" => "unknown".to_string(),
                    p => p.to_string(),
                };
                return Err(DataDirLockError::Held { dir: dir.to_path_buf(), pid });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes()).map_err(io)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_directory_is_refused_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = DataDirLock::acquire(dir.path()).unwrap();
        match DataDirLock::acquire(dir.path()) {
            Err(DataDirLockError::Held { pid, .. }) => assert_eq!(pid, std::process::id().to_string()),
            other => panic!("a second lock was not refused: {other:?}"),
        }
        drop(held);
        DataDirLock::acquire(dir.path()).expect("the directory is free once the holder lets go");
    }
}
