//! Snapshots: the state machine's whole state as files, as storage.md
//! describes it: a copy of the store checkpoint plus the queue log files,
//! which a node that is too far behind (or new) receives instead of the
//! entries it missed. It stages the snapshot under `snapshots/` and swaps it
//! in at its next boot, never while it serves.
//!
//! A build copies the last committed checkpoint first, in one LMDB read
//! transaction (compacted), then every qlog file as it stands, with reclaim
//! held off for the whole copy: every record above the copied checkpoint is
//! then in the copied files (appends only add to them), and no file a store
//! at that checkpoint still reads is freed under the copy. A record torn at
//! the end of an active file by a concurrent append is a torn tail to the
//! boot that reads the snapshot, which cuts it; the checkpoint is below it.
//! `.qidx` files are not copied: a boot rebuilds a missing one by scanning.
//!
//! The snapshot is a directory: `store/data.mdb`, `qlog/...` as the data
//! directory lays it out, and `MANIFEST` (JSON: the checkpoint's applied
//! log id and leader, the files and bytes), written and synced last, so a
//! directory without it is an incomplete snapshot and is never installed.
//! The files are plain files outside the storage seam, as the checkpoint
//! is: heed owns the one, and the others are copied whole.

use crate::log_id::LogId;
use crate::storage::os::OsStorage;
use crate::storage::{replace_durable, Storage};
use crate::store::checkpoint::{CheckpointError, CheckpointFile};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where a received snapshot waits for the next boot.
pub const STAGED: &str = "snapshots/staged";
const MANIFEST: &str = "MANIFEST";
/// What a snapshot copies of the qlog directory besides its logs' files.
const LAYOUT_FILES: [&str; 4] = ["LANES", "SHARDS", "REPLICATOR", "FORMAT"];

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("{path} is not a snapshot's manifest: {why}")]
    Manifest { path: PathBuf, why: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The last entry the snapshot's store holds.
    pub applied: LogId,
    pub applied_leader: u64,
    /// qlog files copied, and their bytes.
    pub files: u64,
    pub bytes: u64,
}

/// What a build copies from: a running node's data directory, its
/// checkpoint, and the lock its reclaim passes hold.
pub struct Source<'a> {
    pub data_dir: &'a Path,
    pub checkpoint: &'a CheckpointFile,
    pub reclaim: &'a Mutex<()>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io { path, source }
}

fn sync_dir(dir: &Path) -> Result<(), SnapshotError> {
    OsStorage.sync_dir(dir).map_err(io(dir))
}

/// Copies `from` to `to` (streamed: a segment is up to 64 MiB) and syncs
/// it; answers the bytes copied.
fn copy_durable(from: &Path, to: &Path) -> Result<u64, SnapshotError> {
    let bytes = fs::copy(from, to).map_err(io(from))?;
    File::open(to).and_then(|f| f.sync_all()).map_err(io(to))?;
    Ok(bytes)
}

/// Builds a snapshot of `source` into the new directory `into`.
pub fn build(source: &Source<'_>, into: &Path) -> Result<Manifest, SnapshotError> {
    // Held for the whole copy: see the module's comment.
    let _reclaim = source.reclaim.lock().expect("reclaim lock");
    // A new directory: a build never mixes into an older one's files.
    fs::create_dir(into).map_err(io(into))?;
    let store = into.join("store");
    fs::create_dir(&store).map_err(io(&store))?;
    let copied = store.join("data.mdb");
    source.checkpoint.copy_to(&copied)?;
    let (applied, applied_leader) = CheckpointFile::open(&store)?.applied()?;
    // The copy's own lock file is of no use to the node that installs it.
    let _ = fs::remove_file(store.join("lock.mdb"));

    let (from_qlog, to_qlog) = (source.data_dir.join("qlog"), into.join("qlog"));
    fs::create_dir_all(&to_qlog).map_err(io(&to_qlog))?;
    for name in LAYOUT_FILES {
        let from = from_qlog.join(name);
        if from.exists() {
            copy_durable(&from, &to_qlog.join(name))?;
        }
    }
    let (mut files, mut bytes) = (0, 0);
    for log in fs::read_dir(&from_qlog).map_err(io(&from_qlog))? {
        let log = log.map_err(io(&from_qlog))?;
        if !log.file_type().map_err(io(&log.path()))?.is_dir() {
            continue;
        }
        let to_log = to_qlog.join(log.file_name());
        fs::create_dir_all(&to_log).map_err(io(&to_log))?;
        for file in fs::read_dir(log.path()).map_err(io(&log.path()))? {
            let file = file.map_err(io(&log.path()))?;
            if file.path().extension().is_some_and(|e| e == "qlog") {
                bytes += copy_durable(&file.path(), &to_log.join(file.file_name()))?;
                files += 1;
            }
        }
        sync_dir(&to_log)?;
    }
    sync_dir(&to_qlog)?;
    sync_dir(&store)?;
    let manifest = Manifest { applied, applied_leader, files, bytes };
    let path = into.join(MANIFEST);
    let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
    replace_durable(&OsStorage, &path, &text).map_err(io(&path))?;
    Ok(manifest)
}

/// The manifest of the complete snapshot in `dir`, if it holds one.
pub fn manifest(dir: &Path) -> Result<Option<Manifest>, SnapshotError> {
    let path = dir.join(MANIFEST);
    match fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map(Some).map_err(|e| SnapshotError::Manifest { path, why: e.to_string() })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SnapshotError::Io { path, source: e }),
    }
}

/// Installs the snapshot staged in `data_dir` (`STAGED`), if a complete one
/// is there: before the boot opens the store. Each part (the store, then
/// the qlog) replaces the data directory's in two steps, remove and rename,
/// and a part already moved is not moved again, so a boot that crashes
/// halfway finishes the swap the next time. Answers the installed manifest.
pub fn install_staged(data_dir: &Path) -> Result<Option<Manifest>, SnapshotError> {
    let staged = data_dir.join(STAGED);
    let Some(manifest) = manifest(&staged)? else { return Ok(None) };
    for part in ["store", "qlog"] {
        let (from, to) = (staged.join(part), data_dir.join(part));
        if !from.exists() {
            continue;
        }
        if to.exists() {
            fs::remove_dir_all(&to).map_err(io(&to))?;
        }
        fs::rename(&from, &to).map_err(io(&to))?;
        sync_dir(data_dir)?;
    }
    fs::remove_dir_all(&staged).map_err(io(&staged))?;
    if let Some(parent) = staged.parent() {
        sync_dir(parent)?;
    }
    Ok(Some(manifest))
}
