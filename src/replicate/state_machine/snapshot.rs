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
//! Every file goes through the storage seam, so the cluster simulator
//! builds, sends and installs snapshots on its simulated disks; the store's
//! copy is heed's, made outside the seam in a scratch directory and taken
//! in (`Storage::import`), and put out where heed opens it at install.

use crate::log_id::LogId;
use crate::storage::{remove_tree, replace_durable, Storage};
use crate::store::checkpoint::{CheckpointError, CheckpointFile, Standing};
use crate::store::rows::MembershipRow;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where a received snapshot waits for the next boot.
pub const STAGED: &str = "snapshots/staged";
const MANIFEST: &str = "MANIFEST";
/// What a snapshot copies of the qlog directory besides its logs' files.
/// GROUPS among them: a snapshot without it installed a layout that read as
/// one group, which a node of several refused at its next boot (the
/// cluster simulator's group seed 0).
const LAYOUT_FILES: [&str; 5] = ["LANES", "SHARDS", "REPLICATOR", "GROUPS", "FORMAT"];
/// The store checkpoint's file in its directory.
const STORE_FILE: &str = "data.mdb";

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
    /// The cluster's membership at `applied`, on a cluster node: what a
    /// snapshot's meta names.
    #[serde(default)]
    pub membership: Option<MembershipRow>,
    /// qlog files copied, and their bytes.
    pub files: u64,
    pub bytes: u64,
}

/// Where a node's state lives: its data directory, on `storage`, and the
/// directory of its store checkpoint, heed's, outside the seam (the data
/// directory's `store/` in a process, a real directory beside the simulated
/// disk in the cluster simulator).
#[derive(Clone, Copy)]
pub struct Site<'a> {
    pub storage: &'a dyn Storage,
    pub data_dir: &'a Path,
    pub store_dir: &'a Path,
}

/// What a build copies from: a running node's site, its checkpoint, and
/// the lock its reclaim passes hold.
pub struct Source<'a> {
    pub site: Site<'a>,
    pub checkpoint: &'a CheckpointFile,
    pub reclaim: &'a Mutex<()>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io { path, source }
}

/// heed's compacted copy of the last committed checkpoint, in a scratch
/// directory beside the checkpoint's (outside the seam, on its volume),
/// taken in as `to`; answers where it stands.
fn copy_store(source: &Source<'_>, to: &Path) -> Result<Standing, SnapshotError> {
    let scratch = source.site.store_dir.with_extension("snapshot-copy");
    // A copy an earlier build left, cut short.
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(io(&scratch))?;
    let copied = scratch.join(STORE_FILE);
    source.checkpoint.copy_to(&copied)?;
    // Read from the copy: the live checkpoint may have moved on since.
    let standing = CheckpointFile::open(&scratch)?.standing()?;
    source.site.storage.import(&copied, to).map_err(io(to))?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(standing)
}

/// Builds a snapshot of `source` into the new directory `into`.
pub fn build(source: &Source<'_>, into: &Path) -> Result<Manifest, SnapshotError> {
    let storage = source.site.storage;
    // Held for the whole copy: see the module's comment.
    let _reclaim = source.reclaim.lock().expect("reclaim lock");
    // A new directory: a build never mixes into an older one's files.
    if storage.exists(into) {
        return Err(SnapshotError::Io { path: into.into(), source: std::io::ErrorKind::AlreadyExists.into() });
    }
    let store = into.join("store");
    storage.create_dir_all(&store).map_err(io(&store))?;
    let standing = copy_store(source, &store.join(STORE_FILE))?;

    let (from_qlog, to_qlog) = (source.site.data_dir.join("qlog"), into.join("qlog"));
    storage.create_dir_all(&to_qlog).map_err(io(&to_qlog))?;
    for name in LAYOUT_FILES {
        let from = from_qlog.join(name);
        if storage.exists(&from) {
            storage.copy_durable(&from, &to_qlog.join(name)).map_err(io(&from))?;
        }
    }
    let (mut files, mut bytes) = (0, 0);
    for log in storage.list(&from_qlog).map_err(io(&from_qlog))? {
        if !log.is_dir {
            continue;
        }
        let (from_log, to_log) = (log.path(&from_qlog), log.path(&to_qlog));
        storage.create_dir_all(&to_log).map_err(io(&to_log))?;
        for file in storage.list(&from_log).map_err(io(&from_log))? {
            if Path::new(&file.name).extension().is_some_and(|e| e == "qlog") {
                let from = file.path(&from_log);
                bytes += storage.copy_durable(&from, &file.path(&to_log)).map_err(io(&from))?;
                files += 1;
            }
        }
        storage.sync_dir(&to_log).map_err(io(&to_log))?;
    }
    for dir in [&to_qlog, &store, into] {
        storage.sync_dir(dir).map_err(io(dir))?;
    }
    let manifest = Manifest {
        applied: standing.applied,
        applied_leader: standing.leader,
        membership: standing.membership,
        files,
        bytes,
    };
    let path = into.join(MANIFEST);
    let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
    replace_durable(storage, &path, &text).map_err(io(&path))?;
    Ok(manifest)
}

/// The manifest of the complete snapshot in `dir`, if it holds one.
pub fn manifest(storage: &dyn Storage, dir: &Path) -> Result<Option<Manifest>, SnapshotError> {
    let path = dir.join(MANIFEST);
    match storage.read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map(Some).map_err(|e| SnapshotError::Manifest { path, why: e.to_string() })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SnapshotError::Io { path, source: e }),
    }
}

/// Installs the snapshot staged at `site` (`STAGED`), if a complete one is
/// there: before the boot opens the store. The store's file is put out
/// over the checkpoint's; the qlog replaces the data directory's in two
/// steps, remove and rename; a part already moved is not moved again, so a
/// boot that crashes halfway finishes the swap the next time. Answers the
/// installed manifest.
pub fn install_staged(site: Site<'_>) -> Result<Option<Manifest>, SnapshotError> {
    let (storage, dir) = (site.storage, site.data_dir);
    let staged = dir.join(STAGED);
    let Some(manifest) = manifest(storage, &staged)? else { return Ok(None) };
    let store = staged.join("store").join(STORE_FILE);
    if storage.exists(&store) {
        std::fs::create_dir_all(site.store_dir).map_err(io(site.store_dir))?;
        storage.export(&store, &site.store_dir.join(STORE_FILE)).map_err(io(&store))?;
    }
    let (from, to) = (staged.join("qlog"), dir.join("qlog"));
    if storage.exists(&from) {
        remove_tree(storage, &to).map_err(io(&to))?;
        storage.rename(&from, &to).map_err(io(&to))?;
        storage.sync_dir(dir).map_err(io(dir))?;
    }
    remove_tree(storage, &staged).map_err(io(&staged))?;
    let parent = staged.parent().expect("under snapshots/");
    storage.sync_dir(parent).map_err(io(parent))?;
    Ok(Some(manifest))
}
