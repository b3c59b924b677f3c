//! The thread that writes checkpoints, so that apply never waits for LMDB.

use super::checkpoint::CheckpointFile;
use super::{CheckpointJob, Store};
use crate::log_id::LogId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};

enum Job {
    Write(CheckpointJob),
    /// Answers once every job sent before it is committed.
    Flush(mpsc::Sender<()>),
}

#[derive(Clone)]
pub struct Checkpointer {
    tx: mpsc::Sender<Job>,
}

impl Checkpointer {
    /// Starts the thread; `committed` follows the applied index of the last
    /// checkpoint it committed.
    pub fn start(file: Arc<CheckpointFile>, committed: Arc<AtomicU64>) -> Self {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("checkpointer".into())
            .spawn(move || {
                // Set once a checkpoint met a full volume: each job holds
                // only the rows changed since the one before, so none after
                // a lost one may be written; the last committed checkpoint
                // stands, and a restart replays the log from it.
                let mut full = false;
                for job in rx {
                    match job {
                        Job::Write(_) if full => {}
                        Job::Write(job) => {
                            let mut rows = Vec::with_capacity(job.rows());
                            for c in job.changes {
                                c.encode_into(&mut rows);
                            }
                            match file.write(&rows, &job.meta) {
                                Ok(()) => {}
                                Err(e) if e.out_of_space() => {
                                    tracing::error!(error = %e, "store checkpoint failed: the volume is full; no more checkpoints until this node restarts (its log holds everything since the last one)");
                                    full = true;
                                    continue;
                                }
                                Err(e) => crate::fatal::exit(&format!("store checkpoint failed: {e}")),
                            }
                            committed.store(job.applied.index, Ordering::Release);
                            tracing::debug!(applied = %job.applied, rows = rows.len(), "checkpoint committed");
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .expect("spawn the checkpointer thread");
        Self { tx }
    }

    pub fn submit(&self, job: CheckpointJob) {
        let _ = self.tx.send(Job::Write(job));
    }

    /// Hands the rows of `state` changed since the last checkpoint to the
    /// thread, unless nothing was applied since `done`, the applied id of
    /// the last one handed over (moved on here). Answers whether it did.
    pub fn changed(&self, state: &RwLock<Store>, done: &mut LogId) -> bool {
        let job = state.write().expect("store lock").checkpoint_job();
        if job.rows() == 0 && job.applied == *done {
            return false;
        }
        *done = job.applied;
        self.submit(job);
        true
    }

    /// Waits until every submitted checkpoint is committed.
    pub fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Job::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}
