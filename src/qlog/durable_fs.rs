//! The file-system steps that make a file, or a directory entry, survive a
//! power cut.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Creates `path` with `bytes` and syncs its contents (not its directory entry).
pub fn create_durable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Syncs a directory, so the entries created in it survive a power cut.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}
