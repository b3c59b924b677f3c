//! The thread that writes checkpoints, so that apply never waits for LMDB
//! (in the cluster simulator, apply writes them itself: `inline`).

use super::checkpoint::CheckpointFile;
use super::{CheckpointJob, Store};
use crate::log_id::LogId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};

enum Job {
    Write(CheckpointJob),
    /// Answers once every job sent before it is committed.
    Flush(mpsc::Sender<()>),
}

#[derive(Clone)]
pub struct Checkpointer {
    to: To,
}

#[derive(Clone)]
enum To {
    Thread(mpsc::Sender<Job>),
    /// Written on the caller's thread (the cluster simulator's).
    Inline(Arc<Mutex<Writer>>),
}

/// Commits checkpoint jobs to the file, in order.
struct Writer {
    file: Arc<CheckpointFile>,
    committed: Arc<AtomicU64>,
    /// Set once a checkpoint met a full volume: each job holds only the
    /// rows changed since the one before, so none after a lost one may be
    /// written; the last committed checkpoint stands, and a restart replays
    /// the log from it.
    full: bool,
}

impl Writer {
    fn write(&mut self, job: CheckpointJob) {
        if self.full {
            return;
        }
        let mut rows = Vec::with_capacity(job.rows());
        for c in job.changes {
            c.encode_into(&mut rows);
        }
        match self.file.write(&rows, &job.meta) {
            Ok(()) => {}
            Err(e) if e.out_of_space() => {
                tracing::error!(error = %e, "store checkpoint failed: the volume is full; no more checkpoints until this node restarts (its log holds everything since the last one)");
                self.full = true;
                return;
            }
            Err(e) => crate::fatal::exit(&format!("store checkpoint failed: {e}")),
        }
        self.committed.store(job.applied.index, Ordering::Release);
        tracing::debug!(applied = %job.applied, rows = rows.len(), "checkpoint committed");
    }
}

impl Checkpointer {
    /// Starts the thread; `committed` follows the applied index of the last
    /// checkpoint it committed.
    pub fn start(file: Arc<CheckpointFile>, committed: Arc<AtomicU64>) -> Self {
        let (tx, rx) = mpsc::channel::<Job>();
        let mut writer = Writer { file, committed, full: false };
        std::thread::Builder::new()
            .name("checkpointer".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Write(job) => writer.write(job),
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .expect("spawn the checkpointer thread");
        Self { to: To::Thread(tx) }
    }

    /// As `start`, with no thread: each checkpoint is committed when it is
    /// submitted, on the caller's thread (the cluster simulator, which runs
    /// a node on one thread in the order its seed decides).
    pub fn inline(file: Arc<CheckpointFile>, committed: Arc<AtomicU64>) -> Self {
        Self { to: To::Inline(Arc::new(Mutex::new(Writer { file, committed, full: false }))) }
    }

    pub fn submit(&self, job: CheckpointJob) {
        match &self.to {
            To::Thread(tx) => {
                let _ = tx.send(Job::Write(job));
            }
            To::Inline(writer) => writer.lock().expect("checkpoint writer lock").write(job),
        }
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
        let To::Thread(to) = &self.to else { return };
        let (tx, rx) = mpsc::channel();
        if to.send(Job::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}
