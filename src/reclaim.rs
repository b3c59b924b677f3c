//! Reclaim: each node frees its own qlog files once retention has left
//! nothing in them that anyone still needs.
//!
//! A message record is dead when it ends at or below its partition's
//! `txns_start` (or its partition is gone). A sealed file all of whose
//! records are below the last committed store checkpoint is then:
//! - unlinked with its `.qidx`, when every message record in it is dead;
//! - rewritten with only its live message records, when enough of its
//!   message bytes are dead (any, in a log of its own; half, in a shared
//!   log; `QUEEN_QLOG_COMPACT_MIN_DEAD_PCT` overrides both). The copy is
//!   made without any lock, since a sealed file is immutable, and swapped
//!   in under the store's lock together with the locator's new positions.
//!
//! Records above the checkpoint are replayed by a restart. The record at
//! the checkpoint's own index is kept too: recovery's logs-end check needs
//! the logs to reach it, and after a roll (or a crash right after one) it
//! can sit in a sealed file with only an empty active file after it. The
//! active file is never touched; an idle log's is sealed by age
//! (`QlogWriter::seal_idle`). The exception is a retired log, a deleted
//! queue's that the writer let go of (`QlogWriter::retire`): once none of
//! its records is at or above the checkpoint, its whole directory goes.

use crate::clock::Clock;
use crate::qlog::files::{FileTable, Location, LogFile};
use crate::qlog::index_file;
use crate::qlog::record::{read_frame, Frame, RecordKind};
use crate::qlog::retired::RetiredLogs;
use crate::qlog::segment::{index_path, remove_log_dir, scan, segment_number, segment_numbers, segment_path, IndexRow};
use crate::storage::{remove_if_there, Storage};
use crate::store::Store;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The most files one pass examines, and the longest it goes on examining.
pub const FILES_PER_PASS: usize = 256;
pub const PASS_BUDGET: Duration = Duration::from_millis(200);
/// The suffix of a rewrite's copy until it replaces its file; a crash can
/// leave one behind, which the next pass removes.
const REWRITE_SUFFIX: &str = ".rewrite";

/// How much of a file must be dead before it is rewritten.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// The logs are shared by many queues (`QUEEN_QLOG_SHARDS` > 0).
    pub shared_logs: bool,
    /// `QUEEN_QLOG_COMPACT_MIN_DEAD_PCT`: the share of a file's message
    /// bytes that must be dead, in percent.
    pub min_dead_pct: Option<u8>,
}

impl Policy {
    fn worth_rewriting(&self, dead: u64, total: u64) -> bool {
        let pct = self.min_dead_pct.unwrap_or(if self.shared_logs { 50 } else { 0 });
        dead > 0 && dead * 100 >= total * u64::from(pct)
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Freed {
    /// Files unlinked.
    pub files: u64,
    /// Files rewritten with only their live records.
    pub rewritten: u64,
    /// Bytes the unlinked files held, and those the rewrites dropped.
    pub bytes: u64,
}

/// Where a pass stopped: the last (log, file) it examined.
pub type Position = (u64, u32);

/// What a sealed file holds that anyone still needs.
enum Verdict {
    /// A record at or above the checkpoint's index (see the module's doc).
    Replayable,
    Dead,
    /// The rows (by index) of its live message records, and the frame bytes
    /// of its dead and of all its message records.
    Live {
        live: Vec<usize>,
        dead_bytes: u64,
        message_bytes: u64,
    },
}

/// What one pass works with.
pub struct Pass<'a> {
    pub root: &'a Path,
    pub files: &'a FileTable,
    pub store: &'a RwLock<Store>,
    /// The applied index of the last committed checkpoint.
    pub checkpointed: u64,
    pub policy: Policy,
    pub retired: &'a RetiredLogs,
    /// What the pass's time budget is measured on.
    pub clock: &'a dyn Clock,
}

/// What a pass did with one file.
enum Outcome {
    Kept,
    Unlinked { bytes: u64 },
    Rewritten { dropped: u64 },
}

impl Pass<'_> {
    /// Frees the dead sealed files after `resume`, examining at most
    /// `FILES_PER_PASS` for at most `PASS_BUDGET` and rewriting at most one
    /// (the pass ends after it, so the next starts beyond it and one busy
    /// log does not take every pass's rewrite). A file that fails is logged
    /// and left as it is, and the pass goes on without rewrites (a full
    /// disk fails every copy, while unlinks still free space). Answers what
    /// it freed and where the next pass resumes (the start, once it reached
    /// the end).
    pub fn run(&self, resume: Position) -> std::io::Result<(Freed, Position)> {
        let storage = self.files.storage();
        let mut logs: Vec<u64> = storage
            .list(self.root)?
            .iter()
            .filter_map(|d| d.name.strip_prefix('q')?.parse().ok())
            .filter(|log| *log >= resume.0)
            .collect();
        logs.sort_unstable();
        let mut freed = Freed::default();
        let mut examined = 0;
        let started = self.clock.monotonic_us();
        let out_of_time = || self.clock.monotonic_us().saturating_sub(started) >= PASS_BUDGET.as_micros() as u64;
        let mut may_rewrite = true;
        for log in logs {
            let dir = self.root.join(format!("q{log}"));
            if self.retired.settled(log) {
                if examined >= FILES_PER_PASS || out_of_time() {
                    // The next pass starts with this log.
                    return Ok((freed, (log - 1, u32::MAX)));
                }
                match self.remove_retired(&dir, log) {
                    Ok((files, gone)) => {
                        examined += files;
                        freed.files += gone.files;
                        freed.bytes += gone.bytes;
                    }
                    Err(e) => {
                        tracing::warn!(dir = %dir.display(), error = %e, "reclaim could not remove a deleted queue's log")
                    }
                }
                continue;
            }
            let segments = match sealed_files(storage, &dir) {
                Ok(segments) => segments,
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "reclaim could not list a qlog directory");
                    continue;
                }
            };
            let mut changed = false;
            let mut stop = None;
            for no in segments.into_iter().filter(|no| (log, *no) > resume) {
                if examined >= FILES_PER_PASS || out_of_time() {
                    stop = Some((log, no - 1));
                    break;
                }
                examined += 1;
                match self.file(&dir, log, no, may_rewrite) {
                    Ok(Outcome::Kept) => {}
                    Ok(Outcome::Unlinked { bytes }) => {
                        freed.files += 1;
                        freed.bytes += bytes;
                        changed = true;
                    }
                    Ok(Outcome::Rewritten { dropped }) => {
                        freed.rewritten += 1;
                        freed.bytes += dropped;
                        changed = true;
                        stop = Some((log, no));
                        break;
                    }
                    Err(e) => {
                        let path = segment_path(&dir, no);
                        tracing::warn!(path = %path.display(), error = %e, "reclaim left a qlog file as it is");
                        may_rewrite = false;
                    }
                }
            }
            if changed {
                if let Err(e) = storage.sync_dir(&dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "reclaim could not fsync a qlog directory");
                }
            }
            if let Some(at) = stop {
                return Ok((freed, at));
            }
        }
        Ok((freed, (0, 0)))
    }

    /// Removes a retired log's directory and everything in it, once none of
    /// its files holds a record at or above the checkpoint; answers how many
    /// files it examined and what it freed (nothing while it must wait).
    /// Each file's `.qidx` goes before the file, then whatever else is left
    /// (an index without its file, a rewrite's copy), so a crash leaves whole
    /// files (a missing index is rebuilt) or a directory without one, which
    /// boot removes.
    fn remove_retired(&self, dir: &Path, log: u64) -> std::io::Result<(usize, Freed)> {
        let storage = self.files.storage();
        let segments = segment_numbers(storage, dir)?;
        let mut gone = Freed::default();
        for (examined, &no) in segments.iter().enumerate() {
            let (rows, len) = self.rows(dir, no)?;
            if !matches!(judge(&rows, &self.store.read().expect("store lock"), self.checkpointed), Verdict::Dead) {
                return Ok((examined + 1, Freed::default()));
            }
            gone.files += 1;
            gone.bytes += len;
        }
        for &no in &segments {
            self.files.remove(log, no);
            remove_if_there(storage, &index_path(dir, no))?;
            storage.remove_file(&segment_path(dir, no))?;
        }
        remove_log_dir(storage, dir)?;
        self.retired.removed(log);
        storage.sync_dir(self.root)?;
        Ok((segments.len(), gone))
    }

    /// A file's index rows (from its `.qidx`, or a scan) and its length.
    fn rows(&self, dir: &Path, no: u32) -> std::io::Result<(Vec<IndexRow>, u64)> {
        let storage = self.files.storage();
        let len = storage.len(&segment_path(dir, no))?;
        let rows = match index_file::load(storage, &index_path(dir, no), len) {
            Some(rows) => rows,
            None => rebuild_index(storage, dir, no)?,
        };
        Ok((rows, len))
    }

    fn file(&self, dir: &Path, log: u64, no: u32, may_rewrite: bool) -> std::io::Result<Outcome> {
        let path = segment_path(dir, no);
        let (rows, len) = self.rows(dir, no)?;
        let verdict = judge(&rows, &self.store.read().expect("store lock"), self.checkpointed);
        match verdict {
            Verdict::Replayable => Ok(Outcome::Kept),
            Verdict::Dead => {
                self.files.remove(log, no);
                // The index first: a crash between the two leaves a file
                // whose index is rebuilt, never an index without its file.
                remove_if_there(self.files.storage(), &index_path(dir, no))?;
                self.files.storage().remove_file(&path)?;
                Ok(Outcome::Unlinked { bytes: len })
            }
            Verdict::Live { live, dead_bytes, message_bytes }
                if may_rewrite && self.policy.worth_rewriting(dead_bytes, message_bytes) =>
            {
                let kept = rewrite(dir, log, no, &rows, &live, self.files, self.store)?;
                Ok(Outcome::Rewritten { dropped: len - kept })
            }
            Verdict::Live { .. } => Ok(Outcome::Kept),
        }
    }
}

/// The index of a sealed file whose `.qidx` is missing or does not match
/// (its roll wrote it, but a failed write or a power cut can lose it), made
/// by scanning the file, as boot does, and written beside it.
fn rebuild_index(storage: &dyn Storage, dir: &Path, no: u32) -> std::io::Result<Vec<IndexRow>> {
    let path = segment_path(dir, no);
    let bytes = storage.read(&path)?;
    let invalid = |what: String| std::io::Error::other(format!("{}: {what}", path.display()));
    let scanned = scan(&bytes).map_err(|e| invalid(e.to_string()))?;
    if let Some(damage) = scanned.damage {
        return Err(invalid(format!("sealed, yet it stops verifying at byte {}", damage.pos)));
    }
    storage.write_durable(&index_path(dir, no), &index_file::encode(bytes.len() as u64, &scanned.rows))?;
    Ok(scanned.rows)
}

/// A log directory's sealed files that reclaim may examine, oldest first;
/// removes the copies of rewrites a crash left behind.
fn sealed_files(storage: &dyn Storage, dir: &Path) -> std::io::Result<Vec<u32>> {
    let mut segments = Vec::new();
    for dirent in storage.list(dir)? {
        let name = &dirent.name;
        if name.ends_with(REWRITE_SUFFIX) {
            storage.remove_file(&dirent.path(dir))?;
        } else if let Some(no) = segment_number(name) {
            segments.push(no);
        }
    }
    segments.sort_unstable();
    // The newest file is the active one.
    segments.pop();
    Ok(segments)
}

fn judge(rows: &[IndexRow], store: &Store, checkpointed: u64) -> Verdict {
    let mut live = Vec::new();
    let (mut dead_bytes, mut message_bytes) = (0, 0);
    for (i, row) in rows.iter().enumerate() {
        if row.id.index >= checkpointed {
            return Verdict::Replayable;
        }
        let Some(span) = row.span else { continue };
        message_bytes += u64::from(row.frame_len);
        let end = span.first_offset + span.count as u64;
        if store.partition(span.queue, span.partition).is_some_and(|p| end > p.txns_start) {
            live.push(i);
        } else {
            dead_bytes += u64::from(row.frame_len);
        }
    }
    if live.is_empty() {
        Verdict::Dead
    } else {
        Verdict::Live { live, dead_bytes, message_bytes }
    }
}

/// Replaces sealed file `no` of `log` with a copy holding only the message
/// records `live` (indexes into `rows`); answers the copy's length.
///
/// Crash safety: the copy is fsynced under a name boot ignores, then
/// renamed over the file. Its entry records and stubs are all at or below
/// the checkpoint, which no recovery reads, so only message records are
/// kept. A crash before the rename leaves the old file; after it, the new
/// one, whose stale `.qidx` (the lengths differ) boot rebuilds by a scan.
fn rewrite(
    dir: &Path,
    log: u64,
    no: u32,
    rows: &[IndexRow],
    live: &[usize],
    files: &FileTable,
    store: &RwLock<Store>,
) -> std::io::Result<u64> {
    let storage = files.storage();
    let path = segment_path(dir, no);
    let old = storage.read(&path)?;
    let mut bytes = Vec::new();
    let mut kept_rows = Vec::with_capacity(live.len());
    for &i in live {
        let row = rows[i];
        let frame = &old[row.pos as usize..(row.pos + u64::from(row.frame_len)) as usize];
        if !matches!(read_frame(frame, 0), Frame::Valid { next, .. } if next == frame.len()) {
            return Err(std::io::Error::other(format!(
                "{}: the record at byte {} fails its checksum; the file is left as it is",
                path.display(),
                row.pos
            )));
        }
        debug_assert_eq!(row.kind, RecordKind::Message);
        kept_rows.push(IndexRow { pos: bytes.len() as u64, ..row });
        bytes.extend_from_slice(frame);
    }
    let copy = dir.join(format!("r{no:08}.qlog{REWRITE_SUFFIX}"));
    storage.write_durable(&copy, &bytes)?;
    let file = Arc::new(LogFile::new(files.opening(|| storage.open(&copy, false))?));
    {
        // Readers go through the table of open files, but one whose file the
        // table let go of (it keeps a bounded number open) opens it again by
        // its path. So the rename, the swap in the table and the new
        // positions all happen under the store's lock: no reader looks up a
        // position of one file and reads it in the other (a reader that
        // looked up before finds another record there, and looks up again:
        // `reader.rs`). A rename outside the lock let a reader open the copy
        // by path while the locator still named the old positions, and its
        // fetch failed a checksum (the power-loss test, in CI).
        let mut store = store.write().expect("store lock");
        storage.rename(&copy, &path)?;
        files.insert(log, no, file);
        for row in &kept_rows {
            let span = row.span.expect("only message records are kept");
            let at = Location { log, segment: no, pos: row.pos, frame_len: row.frame_len };
            store.locator.relocate(span.queue, span.partition, span.first_offset, at);
        }
    }
    storage.write_durable(&index_path(dir, no), &index_file::encode(bytes.len() as u64, &kept_rows))?;
    Ok(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_id::LogId;
    use crate::qlog::entry_record::Stub;
    use crate::qlog::record::frame_into;
    use crate::storage::os::OsStorage;

    #[test]
    fn a_missing_index_is_rebuilt_from_the_file_and_a_damaged_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = Vec::new();
        for index in 1..=3 {
            let stub = Stub { id: LogId::new(1, index), home: 0, copies: 2, ordinal: 1, digest: [7; 16] };
            frame_into(&stub.encode(), &mut bytes);
        }
        std::fs::write(segment_path(dir.path(), 4), &bytes).unwrap();
        let rows = rebuild_index(&OsStorage, dir.path(), 4).unwrap();
        assert_eq!(rows.iter().map(|r| r.id.index).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(index_file::load(&OsStorage, &index_path(dir.path(), 4), bytes.len() as u64), Some(rows));

        bytes[70] ^= 0xff;
        std::fs::write(segment_path(dir.path(), 5), &bytes).unwrap();
        assert!(rebuild_index(&OsStorage, dir.path(), 5).unwrap_err().to_string().contains("stops verifying"));
        assert!(!index_path(dir.path(), 5).exists());
    }

    #[test]
    fn a_log_of_its_own_is_rewritten_on_its_first_dead_byte_and_a_shared_one_at_half() {
        let own = Policy { shared_logs: false, min_dead_pct: None };
        let shared = Policy { shared_logs: true, min_dead_pct: None };
        assert!(!own.worth_rewriting(0, 100) && own.worth_rewriting(1, 100));
        assert!(!shared.worth_rewriting(49, 100) && shared.worth_rewriting(50, 100));
        let set = Policy { shared_logs: true, min_dead_pct: Some(10) };
        assert!(!set.worth_rewriting(9, 100) && set.worth_rewriting(10, 100));
    }
}
