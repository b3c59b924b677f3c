//! Opening the log at boot, over a `Storage`: the layout first (its FORMAT
//! says whether this build reads the directory at all, before anything else
//! is read), then, with the store reopened at its checkpoint, the file
//! table, recovery (`recovery.rs`) and the writer after the last entry. A
//! node boots through it, and so do both simulators and the tests that run
//! the raft parts alone, each on its own storage and clock.

use crate::clock::Clock;
use crate::log_id::LogId;
use crate::qlog::files::FileTable;
use crate::qlog::layout::{Layout, LayoutError};
use crate::qlog::retired::RetiredLogs;
use crate::qlog::sync_ledger::SyncLedger;
use crate::qlog::writer::QlogWriter;
use crate::recovery::{recover, RecoveryError, Replay};
use crate::storage::Storage;
use crate::store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where the log lives and what it should be.
pub struct LogSite {
    pub storage: Arc<dyn Storage>,
    /// The qlog's directory.
    pub root: PathBuf,
    /// The layout a new directory is founded with.
    pub wanted: Layout,
    /// The on-disk format this build writes.
    pub format: u32,
}

/// A site whose layout is open: the store may be read now.
pub struct LaidOut {
    site: LogSite,
    /// The directory's own layout (a new one's is the wanted one).
    pub layout: Layout,
    /// The format the directory was found at, before any upgrade.
    pub found_format: u32,
}

/// How the writer writes.
pub struct Writing {
    pub segment_bytes: u64,
    /// An idle log's file is sealed once its first record is this old.
    pub seal_age: Duration,
    pub clock: Arc<dyn Clock>,
    pub retired: Arc<RetiredLogs>,
}

/// The log, recovered and open for writing.
pub struct OpenedLog {
    pub layout: Layout,
    pub found_format: u32,
    pub files: Arc<FileTable>,
    pub writer: QlogWriter,
    /// The last entry in the logs: the planner continues after it.
    pub last: LogId,
    /// Entries the replay applied, and entries cut for a missing copy.
    pub replayed: u64,
    pub cut: u64,
    /// The index through which the log no longer says where entries sit.
    pub purged: u64,
}

impl LogSite {
    /// Opens the directory's layout, or founds it as wanted.
    pub fn lay_out(self) -> Result<LaidOut, LayoutError> {
        let (layout, found_format) = Layout::open_or_create(&*self.storage, &self.root, &self.wanted, self.format)?;
        if layout != self.wanted {
            tracing::warn!(?layout, "QUEEN_QLOG_SHARDS and QUEEN_QLOG_LANES take effect only on a new directory; keeping the directory's own");
        }
        Ok(LaidOut { site: self, layout, found_format })
    }
}

impl LaidOut {
    /// Recovers `store` (reopened at its checkpoint) from the log, keeping
    /// up to `open_files` files open, and opens the writer after the last
    /// entry.
    pub fn recover(
        self,
        store: &mut Store,
        open_files: usize,
        (ledger, replay): (Option<&SyncLedger>, Replay),
        writing: Writing,
    ) -> Result<OpenedLog, RecoveryError> {
        let LogSite { storage, root, .. } = self.site;
        let files = Arc::new(FileTable::new(root.clone(), open_files, storage));
        let recovered = recover(store, &root, &self.layout, &files, (ledger, replay))?;
        let purged = recovered.index.purged();
        let writer = QlogWriter::new(
            root,
            self.layout.clone(),
            (recovered.logs, recovered.index),
            (writing.segment_bytes, writing.seal_age, writing.clock),
            writing.retired,
        );
        Ok(OpenedLog {
            layout: self.layout,
            found_format: self.found_format,
            files,
            writer,
            last: recovered.last,
            replayed: recovered.replayed,
            cut: recovered.cut,
            purged,
        })
    }
}
