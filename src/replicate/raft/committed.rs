//! The committed log id, kept for openraft off its core's path. openraft
//! saves it at every commit, inline in its core loop; a durable file write
//! there (a temp file, an fdatasync, a rename, a directory sync) stalled
//! every commit behind two syncs. A committed id may lag on disk
//! (`raft_state.rs`): a boot then replays less and learns the rest from the
//! leader. So `set` only records it, and a thread of its own writes the
//! newest one at most every `EVERY`, and once more when the log stops.

use crate::log_id::LogId;
use crate::replicate::log_store::raft_state::{RaftState, RaftStateError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the newest committed id is written at most.
const EVERY: Duration = Duration::from_millis(100);

type Led = (LogId, u64);

#[derive(Default)]
struct Latest {
    id: Option<Led>,
    saved: Option<Led>,
    stop: bool,
}

pub struct Committed {
    latest: Arc<(Mutex<Latest>, Condvar)>,
    state: RaftState,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Committed {
    /// Starts from `saved`, the id the file holds, writing to `state`.
    pub fn start(state: RaftState, saved: Option<Led>) -> Self {
        let committed = Self::stepped(state, saved);
        let (shared, state) = (committed.latest.clone(), committed.state.clone());
        let thread = crate::replicate::stage::spawn("raft committed", move || loop {
            let stop = {
                let (lock, changed) = &*shared;
                let mut latest = lock.lock().expect("committed lock");
                while latest.id == latest.saved && !latest.stop {
                    latest = changed.wait(latest).expect("committed lock");
                }
                latest.stop
            };
            if let Err(e) = save_newest(&shared.0, &state) {
                // A lagging committed id is safe; a failing disk is the
                // syncer's to stop the node for.
                tracing::warn!(error = %e, "the committed index could not be saved; a restart replays less");
            }
            if stop {
                return;
            }
            std::thread::sleep(EVERY);
        });
        *committed.thread.lock().expect("committed lock") = Some(thread);
        committed
    }

    /// As `start`, with no thread: the caller writes the newest id with
    /// `save_newest` when it chooses (the cluster simulator, which runs a
    /// node on one thread in the order its seed decides).
    pub fn stepped(state: RaftState, saved: Option<Led>) -> Self {
        let latest = Arc::new((Mutex::new(Latest { id: saved, saved, stop: false }), Condvar::new()));
        Self { latest, state, thread: Mutex::new(None) }
    }

    /// Writes the newest id, unless it is the one written last.
    pub fn save_newest(&self) -> Result<(), RaftStateError> {
        save_newest(&self.latest.0, &self.state)
    }

    /// Records the newest committed id; it is written soon after.
    pub fn set(&self, id: LogId, leader: u64) {
        let (lock, changed) = &*self.latest;
        let mut latest = lock.lock().expect("committed lock");
        if latest.id.is_none_or(|(at, _)| at.index < id.index) {
            latest.id = Some((id, leader));
            changed.notify_one();
        }
    }

    /// The newest committed id known.
    pub fn get(&self) -> Option<Led> {
        self.latest.0.lock().expect("committed lock").id
    }

    /// Writes the newest id and stops the thread.
    pub fn stop(&self) {
        {
            let (lock, changed) = &*self.latest;
            lock.lock().expect("committed lock").stop = true;
            changed.notify_one();
        }
        if let Some(t) = self.thread.lock().expect("committed lock").take() {
            let _ = t.join();
        }
    }
}

fn save_newest(latest: &Mutex<Latest>, state: &RaftState) -> Result<(), RaftStateError> {
    let due = {
        let latest = latest.lock().expect("committed lock");
        latest.id.filter(|id| Some(*id) != latest.saved)
    };
    if let Some((id, leader)) = due {
        state.save_committed(id, leader)?;
        latest.lock().expect("committed lock").saved = Some((id, leader));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::os::OsStorage;

    #[test]
    fn the_newest_committed_id_reaches_the_file_soon_and_at_the_stop() {
        let tmp = tempfile::tempdir().unwrap();
        let state = RaftState::open(OsStorage::shared(), &tmp.path().join("raft")).unwrap();
        let committed = Committed::start(state.clone(), None);
        committed.set(LogId::new(2, 10), 1);
        committed.set(LogId::new(2, 9), 1);
        assert_eq!(committed.get(), Some((LogId::new(2, 10), 1)), "an older id does not replace a newer one");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while state.committed().unwrap() != Some((LogId::new(2, 10), 1)) {
            assert!(std::time::Instant::now() < deadline, "the committed id was not written");
            std::thread::sleep(Duration::from_millis(10));
        }
        committed.set(LogId::new(3, 12), 2);
        committed.stop();
        assert_eq!(state.committed().unwrap(), Some((LogId::new(3, 12), 2)), "the stop writes the newest");
    }
}
