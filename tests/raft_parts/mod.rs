//! The openraft storage parts on a fresh data directory, for the tests
//! that drive them through openraft.

use queen::seams::boot::Replay;
use queen::seams::boot::{LogSite, Writing};
use queen::seams::clock::SystemClock;
use queen::seams::metrics::Metrics;
use queen::seams::qlog::{Layout, RAFT_FORMAT};
use queen::seams::raft::ApplyGuard;
use queen::seams::raft::RaftLog;
use queen::seams::raft::RaftMachine;
use queen::seams::replicate::AfterApply;
use queen::seams::replicate::RaftState;
use queen::seams::storage::OsStorage;
use queen::seams::store::Store;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The data directory the parts run in; the log's syncer stops with it.
pub struct Dir {
    _tmp: tempfile::TempDir,
    log: RaftLog,
}

impl Drop for Dir {
    fn drop(&mut self) {
        self.log.stop();
    }
}

/// A log storage and a state machine over an empty data directory.
pub fn open() -> (Dir, RaftMachine) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("qlog");
    let storage = OsStorage::shared();
    let wanted = Layout { lanes: 1, shards: 0, replicator: "openraft".into(), groups: 1 };
    let site = LogSite { storage: storage.clone(), root, wanted, format: RAFT_FORMAT };
    let writing = Writing {
        segment_bytes: 1 << 20,
        seal_age: Duration::from_secs(30),
        clock: SystemClock::shared(),
        retired: Arc::default(),
    };
    let opened =
        site.lay_out().unwrap().recover(&mut Store::default(), 64, (None, Replay::default()), writing).unwrap();
    let state = RaftState::open(storage, &tmp.path().join("raft")).unwrap();
    let log = RaftLog::start(opened.writer, opened.files, state, Arc::new(Metrics::default()), None).unwrap();
    let machine = RaftMachine {
        store: Arc::new(RwLock::new(Store::default())),
        log: log.clone(),
        guard: Arc::new(ApplyGuard::open(OsStorage::shared(), &tmp.path().join("raft"), None, None).unwrap()),
        after: AfterApply { metrics: Arc::default(), apply_watch: Arc::default(), checkpoints: None },
        snapshots: None,
    };
    (Dir { _tmp: tmp, log }, machine)
}
