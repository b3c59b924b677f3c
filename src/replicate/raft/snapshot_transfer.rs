//! A snapshot's way from the leader to a node the log no longer reaches
//! (storage.md, "Crash recovery"): the leader sends the snapshot directory
//! (`state_machine/snapshot.rs`: its store checkpoint, its queue log files
//! and a MANIFEST) file by file, in chunks over the raft port, MANIFEST
//! last; the receiver writes them under `snapshots/incoming/`, and when the
//! last arrives it syncs them, notes the log position the snapshot holds
//! (`RAFT_POINT`), moves the directory to `snapshots/staged` and exits with
//! code 75. The next boot swaps the snapshot in before it opens anything
//! (`install_staged`) and takes the log up after that position, never
//! while it serves.

use super::rpc::{Request, Response};
use super::types::{to_qlog, RaftLogId};
use crate::replicate::log_store::raft_state::{RaftState, RaftStateError};
use crate::replicate::state_machine::snapshot::{self, Manifest, Site, SnapshotError, STAGED};
use crate::storage::{files_under, remove_tree, replace_durable, Storage};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The exit code of a node that staged a snapshot to install at its next
/// boot (recovery.md: "exits with code 75").
pub const SNAPSHOT_EXIT_CODE: i32 = 75;
/// Where a snapshot's files arrive.
pub const INCOMING: &str = "snapshots/incoming";
/// The staged snapshot's log position.
pub const RAFT_POINT: &str = "RAFT_POINT";
/// The bytes of one chunk.
const CHUNK: usize = 1 << 20;
const MANIFEST: &str = "MANIFEST";

/// The raft log position a staged snapshot holds the log through: the boot
/// that installs it takes it as committed and purged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaftPoint {
    pub last: RaftLogId,
}

/// Every file under `dir`, relative to it, MANIFEST last: a receiver that
/// has MANIFEST has the rest.
fn files(storage: &dyn Storage, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = files_under(storage, dir)?;
    out.sort_by_key(|p| (p == Path::new(MANIFEST), p.clone()));
    Ok(out)
}

/// The requests that send the snapshot in `dir` as transfer `transfer`, in
/// order; the caller sends each and waits for its answer before the next.
pub fn chunks(
    storage: Arc<dyn Storage>,
    dir: &Path,
    transfer: &str,
) -> std::io::Result<impl Iterator<Item = std::io::Result<Request>>> {
    let transfer = transfer.to_string();
    let dir = dir.to_path_buf();
    Ok(files(&*storage, &dir)?.into_iter().flat_map(move |rel| {
        let path = dir.join(&rel);
        let (storage, transfer) = (storage.clone(), transfer.clone());
        let offsets: Vec<std::io::Result<u64>> = match storage.len(&path) {
            Ok(0) => vec![Ok(0)],
            Ok(len) => (0..len).step_by(CHUNK).map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        offsets.into_iter().map(move |offset| {
            let offset = offset?;
            let len = storage.len(&path)?;
            let data = storage.open(&path, false)?.read_vec_at((len - offset).min(CHUNK as u64) as usize, offset)?;
            let rel = rel.to_string_lossy().into_owned();
            Ok(Request::SnapshotChunk { transfer: transfer.clone(), path: rel, offset, data })
        })
    }))
}

#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    #[error("a snapshot chunk names {0:?}, which is not a plain relative path")]
    BadPath(String),
    #[error("a snapshot transfer is named {0:?}; names are letters, digits and dashes")]
    BadTransfer(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the snapshot of transfer {0} arrived without its MANIFEST")]
    Incomplete(String),
    #[error(
        "the snapshot of transfer {transfer} holds {files} qlog files of {bytes} bytes where its MANIFEST counts {} of {}",
        counted.0,
        counted.1
    )]
    Missing { transfer: String, files: u64, bytes: u64, counted: (u64, u64) },
    #[error(transparent)]
    Install(#[from] SnapshotError),
    #[error(transparent)]
    RaftState(#[from] RaftStateError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReceiveError {
    let path = path.to_path_buf();
    move |source| ReceiveError::Io { path, source }
}

/// The receiving side, over a node's data directory.
pub struct Inbox {
    pub storage: Arc<dyn Storage>,
    pub data_dir: PathBuf,
}

impl Inbox {
    fn transfer_dir(&self, transfer: &str) -> Result<PathBuf, ReceiveError> {
        if transfer.is_empty() || !transfer.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(ReceiveError::BadTransfer(transfer.to_string()));
        }
        Ok(self.data_dir.join(INCOMING).join(transfer))
    }

    /// Writes one chunk where it belongs, durably: a chunk answered is one
    /// the sender never sends again, so it must outlive a power cut. (Synced
    /// only at `done`, a power cut between two chunks took the files sent
    /// before it, the sender went on with the next ones to the rebooted
    /// node, and a snapshot without its qlog's FORMAT and GROUPS was staged
    /// and installed: the cluster simulator's placed seed 701678.)
    pub fn chunk(&self, transfer: &str, path: &str, offset: u64, data: &[u8]) -> Result<(), ReceiveError> {
        let rel = Path::new(path);
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) || path.is_empty() {
            return Err(ReceiveError::BadPath(path.to_string()));
        }
        let file = self.transfer_dir(transfer)?.join(rel);
        let parent = file.parent().expect("a file in a directory");
        let storage = &*self.storage;
        if offset == 0 {
            crate::storage::create_dir_durable(storage, parent).map_err(io(parent))?;
            // A chunk sent again after a cut starts the file over.
            crate::storage::remove_if_there(storage, &file).map_err(io(&file))?;
        }
        let f = storage.open(&file, offset == 0).map_err(io(&file))?;
        f.write_all_at(data, offset).and_then(|()| f.datasync()).map_err(io(&file))?;
        if offset == 0 {
            storage.sync_dir(parent).map_err(io(parent))?;
        }
        Ok(())
    }

    /// The transfer is whole (each chunk was made durable as it came):
    /// checks that the qlog files its MANIFEST counts are all there, notes
    /// `point`, and stages it in place of any snapshot staged before.
    /// Answers the staged directory.
    pub fn done(&self, transfer: &str, point: RaftPoint) -> Result<PathBuf, ReceiveError> {
        let storage = &*self.storage;
        let dir = self.transfer_dir(transfer)?;
        let Some(manifest) = snapshot::manifest(storage, &dir)? else {
            return Err(ReceiveError::Incomplete(transfer.to_string()));
        };
        let (mut files, mut bytes) = (0, 0);
        for rel in files_under(storage, &dir).map_err(io(&dir))? {
            if rel.starts_with("qlog") && rel.extension().is_some_and(|e| e == "qlog") {
                let path = dir.join(&rel);
                bytes += storage.len(&path).map_err(io(&path))?;
                files += 1;
            }
        }
        if (files, bytes) != (manifest.files, manifest.bytes) {
            let counted = (manifest.files, manifest.bytes);
            return Err(ReceiveError::Missing { transfer: transfer.to_string(), files, bytes, counted });
        }
        let point_path = dir.join(RAFT_POINT);
        let bytes = serde_json::to_vec(&point).expect("a raft point serializes");
        replace_durable(storage, &point_path, &bytes).map_err(io(&point_path))?;
        let staged = self.data_dir.join(STAGED);
        remove_tree(storage, &staged).map_err(io(&staged))?;
        storage.rename(&dir, &staged).map_err(io(&staged))?;
        let parent = staged.parent().expect("under snapshots/");
        storage.sync_dir(parent).map_err(io(parent))?;
        // Transfers cut short before this one are of no use now.
        let incoming = self.data_dir.join(INCOMING);
        let _ = remove_tree(storage, &incoming);
        Ok(staged)
    }
}

/// The raft position of the snapshot staged at `site`, if one is staged
/// and came over raft.
fn staged_point(site: Site<'_>) -> Result<Option<RaftPoint>, ReceiveError> {
    let path = site.data_dir.join(STAGED).join(RAFT_POINT);
    match site.storage.read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ReceiveError::Io { path, source: std::io::Error::other(e) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReceiveError::Io { path, source: e }),
    }
}

/// A cluster node's boot takes in the snapshot staged at `site`, before it
/// opens anything: the raft state under `raft_dir` notes the log as
/// committed and purged through the snapshot's point (the log takes up
/// after it), then the snapshot replaces the store and the qlog. Answers
/// the installed manifest.
pub fn install_staged(site: Site<'_>, raft: &RaftState) -> Result<Option<Manifest>, ReceiveError> {
    if let Some(point) = staged_point(site)? {
        let (id, leader) = to_qlog(&point.last);
        raft.save_purged(id, leader)?;
        raft.save_committed(id, leader)?;
    }
    Ok(snapshot::install_staged(site)?)
}

/// Whether `response` is the receiver's acknowledgement of a chunk.
pub fn chunk_taken(response: Response) -> Result<(), String> {
    match response {
        Response::SnapshotChunk(r) => r,
        _ => Err("the peer answered another kind of call".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::os::OsStorage;
    use std::fs;

    #[test]
    fn a_snapshot_directory_arrives_whole_and_staged_and_a_path_out_of_it_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("out");
        let storage = OsStorage::shared();
        fs::create_dir_all(src.join("qlog/q1")).unwrap();
        fs::write(src.join("qlog/q1/r00000001.qlog"), vec![7u8; CHUNK + 10]).unwrap();
        fs::write(src.join("qlog/LANES"), b"").unwrap();
        let manifest = Manifest {
            applied: crate::log_id::LogId::new(2, 9),
            applied_leader: 1,
            membership: None,
            files: 1,
            bytes: CHUNK as u64 + 10,
        };
        fs::write(src.join(MANIFEST), serde_json::to_vec(&manifest).unwrap()).unwrap();
        let inbox = Inbox { storage: storage.clone(), data_dir: tmp.path().join("node") };
        let requests: Vec<Request> = chunks(storage.clone(), &src, "t-1").unwrap().map(Result::unwrap).collect();
        assert_eq!(requests.len(), 4, "two chunks of the big file, one of each other file");
        let mut last = String::new();
        for r in requests {
            let Request::SnapshotChunk { transfer, path, offset, data } = r else { panic!("a chunk") };
            inbox.chunk(&transfer, &path, offset, &data).unwrap();
            last = path;
        }
        assert_eq!(last, MANIFEST, "MANIFEST goes last");
        let point = RaftPoint { last: super::super::types::to_raft(crate::log_id::LogId::new(2, 9), 1).unwrap() };
        let staged = inbox.done("t-1", point).unwrap();
        assert_eq!(fs::read(staged.join("qlog/q1/r00000001.qlog")).unwrap(), vec![7u8; CHUNK + 10]);
        let site = Site { storage: &OsStorage, data_dir: &inbox.data_dir, store_dir: &tmp.path().join("store") };
        assert_eq!(staged_point(site).unwrap(), Some(point));
        // A transfer that lost a file (its chunks, answered, never landed)
        // is refused, not staged.
        for r in chunks(storage, &src, "t-3").unwrap().map(Result::unwrap) {
            let Request::SnapshotChunk { transfer, path, offset, data } = r else { panic!("a chunk") };
            if !path.ends_with(".qlog") {
                inbox.chunk(&transfer, &path, offset, &data).unwrap();
            }
        }
        assert!(matches!(inbox.done("t-3", point), Err(ReceiveError::Missing { files: 0, .. })));
        assert!(matches!(inbox.chunk("t-2", "../x", 0, b""), Err(ReceiveError::BadPath(_))));
        assert!(matches!(inbox.chunk("../t", "x", 0, b""), Err(ReceiveError::BadTransfer(_))));
    }
}
