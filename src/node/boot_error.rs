//! Why a node does not boot: each names what it found, for the FATAL line.

use crate::auth_policy::PolicyError;
use crate::data_dir_lock::DataDirLockError;
use crate::encryption::EncryptionError;
use crate::jwt::AuthConfigError;
use crate::qlog::layout::LayoutError;
use crate::recovery::RecoveryError;
use crate::replicate::log_store::raft_state::RaftStateError;
use crate::replicate::raft::apply_guard::ApplyGuardError;
use crate::replicate::raft::force_recover::ForceRecoverError;
use crate::replicate::raft::founding::FoundingError;
use crate::replicate::raft::replicator::ClusterError;
use crate::replicate::raft::snapshot_transfer::ReceiveError;
use crate::replicate::raft::version_gate::TooOld;
use crate::replicate::state_machine::snapshot::SnapshotError;
use crate::store::checkpoint::CheckpointError;
use crate::test_hooks::TestHookError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Locked(#[from] DataDirLockError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    #[error(transparent)]
    Auth(#[from] AuthConfigError),
    #[error(transparent)]
    AuthPolicy(#[from] PolicyError),
    #[error(transparent)]
    Encryption(#[from] EncryptionError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    TestHook(#[from] TestHookError),
    #[error("queue {0:?} is configured with encryptionEnabled and QUEEN_ENCRYPTION_KEY is not set: its messages cannot be read")]
    EncryptedQueueWithoutKey(String),
    #[error(transparent)]
    Founding(#[from] FoundingError),
    #[error(transparent)]
    RaftState(#[from] RaftStateError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    ApplyGuard(#[from] ApplyGuardError),
    #[error(transparent)]
    ForceRecover(#[from] ForceRecoverError),
    #[error(transparent)]
    StagedSnapshot(#[from] ReceiveError),
    #[error(transparent)]
    TooOld(#[from] TooOld),
    #[error(
        "group 0 holds {0} queues, but with QUEEN_RAFT_GROUPS above 1 queues live in the other groups: \
         this directory was founded by a build that kept every queue in group 0; found the cluster again"
    )]
    QueuesInGroup0(usize),
}
