//! The logs of deleted queues that the writer has let go of
//! (`QlogWriter::retire`): nothing writes to them again, so reclaim may
//! remove their whole directory, active file included, once every record in
//! it is below the store's checkpoint.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a retired log is left alone: a group commit the syncer took
/// before the writer let go (an idle log's seal) may still be creating its
/// next file.
const SETTLE: Duration = Duration::from_secs(5);

#[derive(Default)]
pub struct RetiredLogs {
    /// Each retired log, with when it was retired.
    logs: Mutex<BTreeMap<u64, Instant>>,
}

impl RetiredLogs {
    pub fn add(&self, log: u64) {
        self.logs.lock().expect("retired logs lock").entry(log).or_insert_with(Instant::now);
    }

    /// Whether the log was retired long enough ago for its directory to go.
    pub fn settled(&self, log: u64) -> bool {
        self.logs.lock().expect("retired logs lock").get(&log).is_some_and(|at| at.elapsed() >= SETTLE)
    }

    /// The log's directory is gone.
    pub fn removed(&self, log: u64) {
        self.logs.lock().expect("retired logs lock").remove(&log);
    }
}
