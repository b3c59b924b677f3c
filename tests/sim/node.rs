//! One node on one thread: the planner, the qlog writer and apply composed
//! as the local replicator composes them on its three threads, over the
//! simulated storage. A group commit is one call; a crash is the storage's,
//! and a boot is the real boot path (layout, checkpoint, recovery).

use super::storage::SimStorage;
use queen::planner::apply::apply;
use queen::planner::command::{Answer, Command};
use queen::planner::effect::Entry;
use queen::planner::Planner;
use queen::qlog::files::{FileTable, Location};
use queen::qlog::layout::Layout;
use queen::qlog::retired::RetiredLogs;
use queen::qlog::writer::{EntryWrite, QlogWriter};
use queen::recovery::recover;
use queen::store::checkpoint::CheckpointFile;
use queen::store::Store;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where the simulated node keeps its qlog.
pub const QLOG_ROOT: &str = "/sim/qlog";

pub struct SimNode {
    checkpoint: CheckpointFile,
    pub store: Store,
    planner: Planner,
    writer: QlogWriter,
    pub files: Arc<FileTable>,
    batch: u64,
}

/// A group commit whose write or fdatasync failed: the node stops, and
/// none of the batch's commands is answered.
#[derive(Debug)]
pub struct Stopped(pub std::io::Error);

impl SimNode {
    /// Boots on `storage` with the checkpoint in `checkpoint_dir`, through
    /// the real boot path; a refusal is answered as its FATAL line's text.
    pub fn boot(storage: &SimStorage, checkpoint_dir: &Path, segment_bytes: u64) -> Result<SimNode, String> {
        let root = PathBuf::from(QLOG_ROOT);
        let wanted = Layout { lanes: 1, shards: 0, replicator: "local".into() };
        let layout = Layout::open_or_create(storage, &root, &wanted).map_err(|e| e.to_string())?;
        let checkpoint = CheckpointFile::open(checkpoint_dir).map_err(|e| e.to_string())?;
        let rows = checkpoint.load().map_err(|e| e.to_string())?;
        let mut store = Store::from_rows(rows, checkpoint.path()).map_err(|e| e.to_string())?;
        let files = Arc::new(FileTable::new(root.clone(), 64, Arc::new(storage.clone())));
        let recovered = recover(&mut store, &root, &layout, &files, None).map_err(|e| e.to_string())?;
        let writer = QlogWriter::new(
            root,
            layout,
            recovered.logs,
            (segment_bytes, Duration::from_secs(24 * 3600)),
            Arc::new(RetiredLogs::default()),
        );
        Ok(SimNode { checkpoint, store, planner: Planner::new(1, recovered.last), writer, files, batch: 0 })
    }

    /// Plans `commands` as one group commit at `now_us`, makes it durable
    /// and applies it. Answers the entries it wrote (for the reference run:
    /// those of a batch that failed may have reached the logs too), and the
    /// commands' answers or the failure that stops the node.
    pub fn commit(&mut self, commands: Vec<Command>, now_us: i64) -> (Vec<Entry>, Result<Vec<Answer>, Stopped>) {
        self.batch += 1;
        self.planner.open_batch(self.batch);
        let planned: Vec<_> = commands.into_iter().map(|c| self.planner.plan(&self.store, c, now_us)).collect();
        let entries: Vec<Entry> = planned.iter().filter_map(|p| p.entry.clone()).collect();
        let mut locations = Vec::with_capacity(entries.len());
        for e in &entries {
            let write = EntryWrite { id: e.id, effects: e.body.encode(), queues: e.queues(), messages: &e.messages };
            locations.push(self.writer.stage(&write));
        }
        if let Err(e) = self.writer.take_pending().run_in_turn(&self.files, None) {
            return (entries, Err(Stopped(e)));
        }
        for (e, locs) in entries.iter().zip(&locations) {
            apply(&mut self.store, e, locs);
        }
        self.planner.batches_applied(self.batch);
        self.writer.batches_synced(self.batch);
        (entries, Ok(planned.into_iter().map(|p| p.answer).collect()))
    }

    /// The process dies: nothing more is written or synced, and the
    /// checkpoint's environment is closed so that a boot can open it again.
    pub fn die(self) {
        self.files.abandon();
    }

    /// Commits a store checkpoint at the applied index.
    pub fn checkpoint(&mut self) {
        let job = self.store.checkpoint_job();
        let mut rows = Vec::with_capacity(job.rows());
        for c in job.changes {
            c.encode_into(&mut rows);
        }
        self.checkpoint.write(&rows, &job.meta).expect("the checkpoint is on the real disk and does not fail");
    }
}

/// Where a reference apply puts messages: nowhere read.
pub fn nowhere(entry: &Entry) -> Vec<Location> {
    vec![Location { log: 0, segment: 0, pos: 0, frame_len: 0 }; entry.messages.len()]
}
