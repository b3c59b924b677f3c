//! The log store's two facts that are not entries: the vote (the term this
//! node has seen and whom it voted for in it, and whether that leader is
//! committed) and the committed index, each a file under `raft/` holding one
//! framed record (length, xxh3, body), replaced by a write to a temporary
//! file, an fdatasync, a rename and a sync of the directory, so a crash
//! leaves the old value or the new one and never a torn one.
//!
//! Raft needs the vote durable before it answers a vote request (a node that
//! forgets its vote can vote twice in a term). The committed index may lag:
//! it is where a boot's replay stops (under raft, durable is not committed:
//! an entry past it may still be cut by the next leader), and a lagging one
//! only makes a boot replay less and learn the rest from the leader. The
//! local replicator keeps neither: on one node, durable is committed.

use crate::log_id::LogId;
use crate::qlog::record::{frame_with, read_frame, Fields, Frame};
use crate::recovery::{Replay, ReplayApply};
use crate::storage::{read_verified, replace_durable, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// openraft's vote: the leader id (term, node) this node voted for, and
/// whether a quorum granted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vote {
    pub term: u64,
    pub node: u64,
    pub committed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RaftStateError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} fails its checksum or does not decode: the {what} is lost, so this node cannot rejoin safely; restore it from a peer (recovery.md)")]
    Damaged { path: PathBuf, what: &'static str },
}

#[derive(Clone)]
pub struct RaftState {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
}

const VOTE: &str = "vote";
const COMMITTED: &str = "committed";
const PURGED: &str = "purged";

impl RaftState {
    /// The state under `dir` (`$QUEEN_RAFT_DIR/raft`), created when absent.
    pub fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<Self, RaftStateError> {
        let io = |source| RaftStateError::Io { path: dir.to_path_buf(), source };
        if !storage.exists(dir) {
            storage.create_dir_all(dir).map_err(io)?;
            if let Some(parent) = dir.parent() {
                storage.sync_dir(parent).map_err(io)?;
            }
        }
        Ok(Self { dir: dir.to_path_buf(), storage })
    }

    /// The vote last saved; `None` on a node that never voted.
    pub fn vote(&self) -> Result<Option<Vote>, RaftStateError> {
        let decode = |f: &mut Fields| Some(Vote { term: f.u64()?, node: f.u64()?, committed: f.u8()? == 1 });
        self.load(VOTE, "vote", decode)
    }

    pub fn save_vote(&self, vote: Vote) -> Result<(), RaftStateError> {
        self.save(VOTE, |b| {
            b.extend_from_slice(&vote.term.to_le_bytes());
            b.extend_from_slice(&vote.node.to_le_bytes());
            b.push(vote.committed as u8);
        })
    }

    /// The committed log id last saved, with the node that led in its
    /// term; `None` before the first.
    pub fn committed(&self) -> Result<Option<(LogId, u64)>, RaftStateError> {
        self.load(COMMITTED, "committed index", decode_led_id)
    }

    pub fn save_committed(&self, id: LogId, leader: u64) -> Result<(), RaftStateError> {
        self.save(COMMITTED, |b| encode_led_id(b, id, leader))
    }

    /// The last log id purged (openraft's `last_purged_log_id`, which the
    /// log must report after its entries are gone), with its leader.
    pub fn purged(&self) -> Result<Option<(LogId, u64)>, RaftStateError> {
        self.load(PURGED, "purge watermark", decode_led_id)
    }

    pub fn save_purged(&self, id: LogId, leader: u64) -> Result<(), RaftStateError> {
        self.save(PURGED, |b| encode_led_id(b, id, leader))
    }

    /// How a boot replays a raft log: through the committed index, holding
    /// every entry openraft has not purged (a follower behind is sent them),
    /// applied by `apply`.
    pub fn replay<'a>(&self, apply: Option<ReplayApply<'a>>) -> Result<Replay<'a>, RaftStateError> {
        Ok(Replay {
            committed: Some(self.committed()?.map_or(0, |(id, _)| id.index)),
            hold_from: Some(self.purged()?.map_or(1, |(id, _)| id.index + 1)),
            apply,
        })
    }

    fn load<T>(
        &self,
        name: &str,
        what: &'static str,
        decode: impl Fn(&mut Fields) -> Option<T>,
    ) -> Result<Option<T>, RaftStateError> {
        let path = self.dir.join(name);
        if !self.storage.exists(&path) {
            return Ok(None);
        }
        let check = |bytes: &[u8]| match read_frame(bytes, 0) {
            Frame::Valid { body, next } if next == bytes.len() => {
                let mut fields = Fields::new(body);
                fields.u8();
                let value = decode(&mut fields);
                let whole = value.is_some() && fields.rest().is_empty();
                (value.filter(|_| whole), whole)
            }
            _ => (None, false),
        };
        let (_, value) = read_verified(&*self.storage, &path, check)
            .map_err(|source| RaftStateError::Io { path: path.clone(), source })?;
        value.map(Some).ok_or(RaftStateError::Damaged { path, what })
    }

    fn save(&self, name: &str, body: impl FnOnce(&mut Vec<u8>)) -> Result<(), RaftStateError> {
        let path = self.dir.join(name);
        let mut bytes = Vec::with_capacity(32);
        frame_with(&mut bytes, |b| {
            // A kind byte first, as every qlog record body has one.
            b.push(name.as_bytes()[0]);
            body(b);
        });
        replace_durable(&*self.storage, &path, &bytes).map_err(|source| RaftStateError::Io { path, source })
    }
}

fn decode_led_id(f: &mut Fields) -> Option<(LogId, u64)> {
    Some((LogId::new(f.u64()?, f.u64()?), f.u64()?))
}

fn encode_led_id(b: &mut Vec<u8>, id: LogId, leader: u64) {
    b.extend_from_slice(&id.term.to_le_bytes());
    b.extend_from_slice(&id.index.to_le_bytes());
    b.extend_from_slice(&leader.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::os::OsStorage;

    #[test]
    fn the_vote_and_the_committed_index_read_back_and_a_damaged_file_refuses() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("raft");
        let state = RaftState::open(OsStorage::shared(), &dir).unwrap();
        assert_eq!(state.vote().unwrap(), None);
        assert_eq!(state.committed().unwrap(), None);
        let vote = Vote { term: 7, node: 3, committed: true };
        state.save_vote(vote).unwrap();
        state.save_committed(LogId::new(7, 1234), 3).unwrap();
        state.save_purged(LogId::new(6, 1000), 2).unwrap();
        let again = RaftState::open(OsStorage::shared(), &dir).unwrap();
        assert_eq!(again.vote().unwrap(), Some(vote));
        assert_eq!(again.committed().unwrap(), Some((LogId::new(7, 1234), 3)));
        assert_eq!(again.purged().unwrap(), Some((LogId::new(6, 1000), 2)));

        let path = dir.join("vote");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[14] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let err = again.vote().unwrap_err();
        assert!(matches!(err, RaftStateError::Damaged { what: "vote", .. }), "{err}");
    }
}
