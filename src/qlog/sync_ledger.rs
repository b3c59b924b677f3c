//! A test-only hook: after every fsync the qlog appends `<path> <length>` to
//! the file named by `QUEEN_TEST_SYNC_LEDGER`. A power-loss test reads it to
//! drop every byte that was never synced, as a file system that lost its page
//! cache would.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct SyncLedger {
    file: Mutex<File>,
}

impl SyncLedger {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { file: Mutex::new(file) })
    }

    /// Records that `path` is durable up to `len` bytes. One `write` call per
    /// line, so a kill never leaves half a line behind.
    pub fn record(&self, path: &Path, len: u64) {
        let line = format!("{} {len}\n", path.display());
        let mut f = self.file.lock().expect("sync ledger lock");
        f.write_all(line.as_bytes()).expect("the test sync ledger is writable");
    }
}

/// Reads a ledger back: the last synced length of every file it names.
pub fn read(path: &Path) -> std::io::Result<std::collections::HashMap<PathBuf, u64>> {
    let mut out = std::collections::HashMap::new();
    for line in std::fs::read_to_string(path)?.lines() {
        if let Some((p, len)) = line.rsplit_once(' ') {
            if let Ok(len) = len.parse() {
                out.insert(PathBuf::from(p), len);
            }
        }
    }
    Ok(out)
}
