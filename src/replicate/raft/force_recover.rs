//! `QUEEN_RAFT_FORCE_RECOVER=<id>`: the way out when a majority of the
//! voters lost their disks for good (recovery.md, "A majority of the disks
//! is gone for good"). Raft cannot elect without a majority, and that
//! majority will never exist again; so the one survivor, named by the
//! variable, writes a membership in which it is the only voter, in a new
//! term and after everything its log holds, before openraft starts. openraft
//! then finds a cluster of one and elects this node, and the entries its log
//! holds past the commit point commit under it. The other nodes are rebuilt
//! empty and join it.
//!
//! A marker, `raft/force_recovered.json`, refuses a second recovery: once
//! members were added, recovering again would drop them. A new disaster
//! that makes a second one right needs the marker moved aside by hand.

use super::log_storage::RaftLog;
use crate::log_id::LogId;
use crate::planner::effect::{Effect, Entry, EntryBody};
use crate::replicate::log_store::raft_state::{RaftState, RaftStateError, Vote};
use crate::storage::{replace_durable, Storage};
use crate::store::rows::{Member, Membership};
use std::path::{Path, PathBuf};

/// The marker a recovery leaves in the raft directory.
pub const MARKER: &str = "force_recovered.json";

#[derive(Debug, thiserror::Error)]
pub enum ForceRecoverError {
    #[error("QUEEN_RAFT_FORCE_RECOVER={named}, but this node is {me}: it names the ONE surviving node, which is expected on the nodes that get rebuilt; start this one empty with QUEEN_RAFT_JOIN=true and without the variable")]
    NotThisNode { named: u64, me: u64 },
    #[error("QUEEN_RAFT_FORCE_RECOVER={me} is still set, but this node already recovered ({}): a second recovery would drop the members added since; remove the variable (when a new disaster makes a second recovery right, move that file aside first)", .marker.display())]
    AlreadyRecovered { me: u64, marker: PathBuf },
    #[error("QUEEN_RAFT_FORCE_RECOVER on an empty log: this node holds nothing to recover; pick the survivor with the highest commit in /health")]
    EmptyLog,
    #[error(transparent)]
    RaftState(#[from] RaftStateError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// What a forced recovery wrote.
#[derive(Debug, serde::Serialize)]
pub struct Recovered {
    pub node: u64,
    pub term: u64,
    pub index: u64,
}

/// Makes node `me`, reached at `member`, the only voter of the cluster
/// whose log is `log`, when `named` (the variable's value) names it.
pub fn force_recover(
    (named, me, member): (u64, u64, Member),
    storage: &dyn Storage,
    raft_dir: &Path,
    state: &RaftState,
    log: &RaftLog,
) -> Result<Recovered, ForceRecoverError> {
    if named != me {
        return Err(ForceRecoverError::NotThisNode { named, me });
    }
    let marker = raft_dir.join(MARKER);
    if storage.exists(&marker) {
        return Err(ForceRecoverError::AlreadyRecovered { me, marker });
    }
    let (last, _) = log.last().ok_or(ForceRecoverError::EmptyLog)?;
    let voted = state.vote()?.map_or(0, |v| v.term);
    // A term no leader this node heard of used, so no entry of the lost
    // nodes' can ever be taken for one of this node's.
    let term = voted.max(last.term) + 1;
    tracing::warn!(
        node = me,
        term,
        after = %last,
        "QUEEN_RAFT_FORCE_RECOVER: UNSAFE RECOVERY. This node makes itself the ONLY voter of the cluster, in term {term}, after \
         everything its log holds. Writes the lost nodes committed without it are gone. Restart it once more WITHOUT the \
         variable, then rebuild the other nodes empty and add them (recovery.md)"
    );
    let membership = Membership { configs: vec![vec![me]], members: vec![(me, member)] };
    let entry = Entry {
        id: LogId::new(term, last.index + 1),
        leader: me,
        body: EntryBody { timestamp_us: 0, effects: vec![Effect::Membership(membership)] },
        messages: vec![],
    };
    log.append_before_start(entry).map_err(|source| ForceRecoverError::Io { path: raft_dir.to_path_buf(), source })?;
    state.save_vote(Vote { term, node: me, committed: false })?;
    let recovered = Recovered { node: me, term, index: last.index + 1 };
    let bytes = serde_json::to_vec_pretty(&recovered).expect("the marker serializes");
    replace_durable(storage, &marker, &bytes).map_err(|source| ForceRecoverError::Io { path: marker, source })?;
    Ok(recovered)
}
