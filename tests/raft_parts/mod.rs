//! The openraft storage parts on a fresh data directory, for the tests
//! that drive them through openraft.

use queen::apply_watch::ApplyWatch;
use queen::clock::SystemClock;
use queen::metrics::Metrics;
use queen::qlog::entry_index::EntryIndex;
use queen::qlog::files::FileTable;
use queen::qlog::layout::{Layout, RAFT_FORMAT};
use queen::qlog::retired::RetiredLogs;
use queen::qlog::writer::QlogWriter;
use queen::replicate::log_store::raft_state::RaftState;
use queen::replicate::raft::apply_guard::ApplyGuard;
use queen::replicate::raft::log_storage::RaftLog;
use queen::replicate::raft::state_machine::RaftMachine;
use queen::storage::os::OsStorage;
use queen::store::Store;
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
    let wanted = Layout { lanes: 1, shards: 0, replicator: "openraft".into() };
    let (layout, _) = Layout::open_or_create(&*storage, &root, &wanted, RAFT_FORMAT).unwrap();
    let files = Arc::new(FileTable::new(root.clone(), 64, storage.clone()));
    let writer = QlogWriter::new(
        root,
        layout,
        (vec![], EntryIndex::default()),
        (1 << 20, Duration::from_secs(30), SystemClock::shared()),
        Arc::new(RetiredLogs::default()),
    );
    let state = RaftState::open(storage, &tmp.path().join("raft")).unwrap();
    let log = RaftLog::start(writer, files, state, Arc::new(Metrics::default()), None).unwrap();
    let machine = RaftMachine {
        store: Arc::new(RwLock::new(Store::default())),
        log: log.clone(),
        apply_watch: Arc::new(ApplyWatch::default()),
        guard: Arc::new(ApplyGuard::open(OsStorage::shared(), &tmp.path().join("raft"), None, None).unwrap()),
        checkpoints: None,
        snapshots: None,
    };
    (Dir { _tmp: tmp, log }, machine)
}
