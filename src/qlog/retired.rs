//! The logs of deleted queues that the writer has let go of
//! (`QlogWriter::retire`): nothing writes to them again, so reclaim may
//! remove their whole directory, active file included, once every record in
//! it is below the store's checkpoint and every group commit the syncer
//! took before the writer let go (an idle log's seal among them) has run
//! its file-system steps.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Default)]
pub struct RetiredLogs {
    /// Each retired log, with how many group commits the syncer had taken
    /// when the writer let go of it.
    logs: Mutex<BTreeMap<u64, u64>>,
    /// How many group commits the syncer has taken and finished.
    synced: AtomicU64,
}

impl RetiredLogs {
    pub fn add(&self, log: u64, taken: u64) {
        self.logs.lock().expect("retired logs lock").entry(log).or_insert(taken);
    }

    /// The syncer has finished the first `count` group commits it took.
    pub fn synced(&self, count: u64) {
        self.synced.fetch_max(count, Ordering::AcqRel);
    }

    /// Whether nothing the syncer took can still write into the log.
    pub fn settled(&self, log: u64) -> bool {
        let synced = self.synced.load(Ordering::Acquire);
        self.logs.lock().expect("retired logs lock").get(&log).is_some_and(|taken| *taken <= synced)
    }

    /// The log's directory is gone.
    pub fn removed(&self, log: u64) {
        self.logs.lock().expect("retired logs lock").remove(&log);
    }
}
