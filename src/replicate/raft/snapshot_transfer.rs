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
use super::types::RaftLogId;
use crate::replicate::state_machine::snapshot::STAGED;
use crate::storage::os::OsStorage;
use crate::storage::{replace_durable, Storage};
use serde::{Deserialize, Serialize};
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

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
fn files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                todo.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort_by_key(|p| (p == Path::new(MANIFEST), p.clone()));
    Ok(out)
}

/// The requests that send the snapshot in `dir` as transfer `transfer`, in
/// order; the caller sends each and waits for its answer before the next.
pub fn chunks(dir: &Path, transfer: &str) -> std::io::Result<impl Iterator<Item = std::io::Result<Request>>> {
    let transfer = transfer.to_string();
    let dir = dir.to_path_buf();
    Ok(files(&dir)?.into_iter().flat_map(move |rel| {
        let path = dir.join(&rel);
        let transfer = transfer.clone();
        let len = fs::metadata(&path).map(|m| m.len());
        let offsets: Vec<std::io::Result<u64>> = match len {
            Ok(0) => vec![Ok(0)],
            Ok(len) => (0..len).step_by(CHUNK).map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        offsets.into_iter().map(move |offset| {
            let offset = offset?;
            let file = fs::File::open(&path)?;
            let len = file.metadata()?.len();
            let mut data = vec![0; (len - offset).min(CHUNK as u64) as usize];
            file.read_exact_at(&mut data, offset)?;
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
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReceiveError {
    let path = path.to_path_buf();
    move |source| ReceiveError::Io { path, source }
}

/// The receiving side, over a node's data directory.
pub struct Inbox {
    pub data_dir: PathBuf,
}

impl Inbox {
    fn transfer_dir(&self, transfer: &str) -> Result<PathBuf, ReceiveError> {
        if transfer.is_empty() || !transfer.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(ReceiveError::BadTransfer(transfer.to_string()));
        }
        Ok(self.data_dir.join(INCOMING).join(transfer))
    }

    /// Writes one chunk where it belongs.
    pub fn chunk(&self, transfer: &str, path: &str, offset: u64, data: &[u8]) -> Result<(), ReceiveError> {
        let rel = Path::new(path);
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) || path.is_empty() {
            return Err(ReceiveError::BadPath(path.to_string()));
        }
        let file = self.transfer_dir(transfer)?.join(rel);
        let parent = file.parent().expect("a file in a directory");
        if offset == 0 {
            fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let f = fs::OpenOptions::new().create(true).write(true).truncate(offset == 0).open(&file).map_err(io(&file))?;
        f.write_all_at(data, offset).map_err(io(&file))
    }

    /// The transfer is whole: syncs its files, notes `point`, and stages
    /// it in place of any snapshot staged before. Answers the staged
    /// directory.
    pub fn done(&self, transfer: &str, point: RaftPoint) -> Result<PathBuf, ReceiveError> {
        let dir = self.transfer_dir(transfer)?;
        if !dir.join(MANIFEST).exists() {
            return Err(ReceiveError::Incomplete(transfer.to_string()));
        }
        let mut dirs = vec![dir.clone()];
        for rel in files(&dir).map_err(io(&dir))? {
            let path = dir.join(&rel);
            fs::File::open(&path).and_then(|f| f.sync_all()).map_err(io(&path))?;
            if let Some(parent) = path.parent().filter(|p| !dirs.iter().any(|d| d == p)) {
                dirs.push(parent.to_path_buf());
            }
        }
        for d in &dirs {
            OsStorage.sync_dir(d).map_err(io(d))?;
        }
        let point_path = dir.join(RAFT_POINT);
        let bytes = serde_json::to_vec(&point).expect("a raft point serializes");
        replace_durable(&OsStorage, &point_path, &bytes).map_err(io(&point_path))?;
        let staged = self.data_dir.join(STAGED);
        if staged.exists() {
            fs::remove_dir_all(&staged).map_err(io(&staged))?;
        }
        fs::rename(&dir, &staged).map_err(io(&staged))?;
        let parent = staged.parent().expect("under snapshots/");
        OsStorage.sync_dir(parent).map_err(io(parent))?;
        // Transfers cut short before this one are of no use now.
        let _ = fs::remove_dir_all(self.data_dir.join(INCOMING));
        Ok(staged)
    }
}

/// The raft position of the snapshot staged in `data_dir`, if one is
/// staged and came over raft.
pub fn staged_point(data_dir: &Path) -> Result<Option<RaftPoint>, ReceiveError> {
    let path = data_dir.join(STAGED).join(RAFT_POINT);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ReceiveError::Io { path, source: std::io::Error::other(e) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReceiveError::Io { path, source: e }),
    }
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

    #[test]
    fn a_snapshot_directory_arrives_whole_and_staged_and_a_path_out_of_it_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("out");
        fs::create_dir_all(src.join("qlog/q1")).unwrap();
        fs::write(src.join("qlog/q1/r00000001.qlog"), vec![7u8; CHUNK + 10]).unwrap();
        fs::write(src.join("qlog/LANES"), b"").unwrap();
        fs::write(src.join(MANIFEST), b"{}").unwrap();
        let inbox = Inbox { data_dir: tmp.path().join("node") };
        let requests: Vec<Request> = chunks(&src, "t-1").unwrap().map(Result::unwrap).collect();
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
        assert_eq!(staged_point(&inbox.data_dir).unwrap(), Some(point));
        assert!(matches!(inbox.chunk("t-2", "../x", 0, b""), Err(ReceiveError::BadPath(_))));
        assert!(matches!(inbox.chunk("../t", "x", 0, b""), Err(ReceiveError::BadTransfer(_))));
    }
}
