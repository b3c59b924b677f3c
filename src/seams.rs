//! The seams: what the tests, the simulators and the benchmarks reach into
//! beside the surface the binary uses (`lib.rs`). The simulators boot a
//! node's parts one by one on their own storage, network and clocks, the
//! benchmarks drive the planner and the qlog directly, and the tests check
//! the log's records as stored; each names here what it takes, and nothing
//! else of the crate is reachable from outside it. An item here is a seam,
//! not an interface for users: it changes with the code behind it.

/// Injected clocks.
pub mod clock {
    pub use crate::clock::{Clock, SystemClock};
}

/// Log ids.
pub mod log_id {
    pub use crate::log_id::{LogId, SINGLE_NODE};
}

pub mod message {
    pub use crate::message::Message;
}

pub mod metrics {
    pub use crate::metrics::Metrics;
}

/// The storage seam itself, and the operating system's side of it.
pub mod storage {
    pub use crate::storage::os::OsStorage;
    pub use crate::storage::{create_dir_durable, DirEntry, Reserve, Storage, StorageFile};
}

/// Which raft group holds a queue, as the tests place their writers.
pub mod placement {
    pub use crate::placement::{group_of_id, group_of_queue};
}

/// One boot of the log: its layout, recovery and writer, in its raft
/// group's directory.
pub mod boot {
    pub use crate::log_boot::{LogSite, Writing};
    pub use crate::node::group_dir;
    pub use crate::recovery::{Replay, ReplayApply};
}

/// The planner: commands, their entries of effects, and apply.
pub mod planner {
    pub use crate::internal_kv::SHARE_GROUPS;
    pub use crate::planner::apply::apply;
    pub use crate::planner::command::{
        AckItem, AckOutcome, AckStatus, Answer, Claim, Command, ConfigureQueue, PopRequest, PushBody, PushItem,
        PushStatus, Subscription,
    };
    pub use crate::planner::effect::{Effect, Entry, EntryBody};
    pub use crate::planner::kafka_txn::{KafkaTxnAnswer, KafkaTxnOp, TxnProducer, TxnRefusal};
    pub use crate::planner::kv::{row_key, Expiry, KvAnswer, KvKind, KvOp, KvResult};
    pub use crate::planner::share::{AckKind, ShareAck, ShareAnswer, ShareOp};
    pub use crate::planner::share_config::{AUTO_OFFSET_RESET, DELIVERY_COUNT_LIMIT, LOCK_DURATION_MS};
    pub use crate::planner::timers::{TimerOp, TimerResult, TimerVerb};
    pub use crate::planner::{Planned, Planner};
}

/// The qlog: its files, records and writer.
pub mod qlog {
    pub use crate::qlog::entry_record::{EntryRecord, Stub, STUB_FRAMED_BYTES};
    pub use crate::qlog::files::{FileTable, Location};
    pub use crate::qlog::layout::{Layout, FORMAT, RAFT_FORMAT};
    pub use crate::qlog::message_record::{MessageRecord, Piece};
    pub use crate::qlog::record::{read_frame, Frame, RecordKind};
    pub use crate::qlog::retired::RetiredLogs;
    pub use crate::qlog::segment::scan;
    pub use crate::qlog::writer::{EntryWrite, QlogWriter};

    /// The test-only ledger of what each fdatasync covered.
    pub mod sync_ledger {
        pub use crate::qlog::sync_ledger::read;
    }
}

/// Reclaim's passes.
pub mod reclaim {
    pub use crate::reclaim::{Freed, Pass, Policy};
}

/// The store and its checkpoint.
pub mod store {
    pub use crate::store::checkpoint::CheckpointFile;
    pub use crate::store::checkpointer::Checkpointer;
    pub use crate::store::rows::{CursorRow, KvRow, Member, Membership};
    pub use crate::store::Store;
}

/// What every replicator shares: the trait, the state machine's parts, the
/// raft log's state files.
pub mod replicate {
    pub use crate::replicate::log_store::raft_state::{RaftState, RaftStateError, Vote};
    pub use crate::replicate::state_machine::after_apply::{AfterApply, CheckpointPace};
    pub use crate::replicate::typed::Typed;
    pub use crate::replicate::{ProposeError, Replicator};

    /// Reading entries back from the qlog.
    pub mod log_store {
        pub use crate::replicate::log_store::{entries, last_index, LogReadError};
    }

    /// Building and installing snapshots.
    pub mod snapshot {
        pub use crate::replicate::state_machine::snapshot::{build, manifest, Site, Source, STAGED};
    }
}

/// The raft replicator and its parts: its port's transport, state machine,
/// log storage and types.
pub mod raft {
    pub use crate::replicate::raft::apply_guard::ApplyGuard;
    pub use crate::replicate::raft::log_storage::RaftLog;
    pub use crate::replicate::raft::membership::MembershipChange;
    pub use crate::replicate::raft::port::{split as split_port, PortShare};
    pub use crate::replicate::raft::replicator::{Cluster, Ground, RaftReplicator, ReclaimBound};
    pub use crate::replicate::raft::snapshot_transfer::install_staged;
    pub use crate::replicate::raft::state_machine::{Machine, RaftMachine, SnapshotFiles};
    pub use crate::replicate::raft::transport::{Accepting, Dialing, Listener, Stream, Transport};
    pub use crate::replicate::raft::types::{to_qlog_entry, to_raft, Applied, Proposed, Queen, RaftEntry, RaftLogId};
    pub use crate::replicate::raft::version_gate::EFFECT_CATALOGUE;

    /// Seeding openraft's draws, for a simulation that replays.
    pub mod runtime {
        pub use crate::replicate::raft::runtime::seed_this_thread;
    }
}
