//! Reclaim: each node frees its own qlog files once retention has left
//! nothing in them that anyone still needs.
//!
//! A sealed file is dead when every message record in it ends at or below
//! its partition's `txns_start` (or its partition is gone), and no record in
//! it is above the last committed store checkpoint, which a restart would
//! replay. A dead file is unlinked with its `.qidx`; the active file is
//! never touched. A partly live file is kept whole: rewriting it with only
//! its live records is not built yet, so its dead bytes wait for the rest.

use super::durable_fs::sync_dir;
use super::files::FileTable;
use super::index_file;
use super::segment::{index_path, segment_number, segment_path, IndexRow};
use crate::store::Store;
use std::path::Path;
use std::sync::RwLock;

/// The most files one pass examines.
pub const FILES_PER_PASS: usize = 256;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Freed {
    pub files: u64,
    pub bytes: u64,
}

/// Where a pass stopped: the last (log, file) it examined.
pub type Position = (u64, u32);

/// One pass over the logs under `root`: unlinks the dead sealed files after
/// `resume`, examining at most `FILES_PER_PASS`. Answers what it freed and
/// where the next pass resumes (the start, once it reached the end).
pub fn pass(
    root: &Path,
    files: &FileTable,
    store: &RwLock<Store>,
    checkpointed: u64,
    resume: Position,
) -> std::io::Result<(Freed, Position)> {
    let mut logs: Vec<u64> = std::fs::read_dir(root)?
        .filter_map(|d| d.ok()?.file_name().to_str()?.strip_prefix('q')?.parse().ok())
        .filter(|log| *log >= resume.0)
        .collect();
    logs.sort_unstable();
    let mut freed = Freed::default();
    let mut examined = 0;
    for log in logs {
        let dir = root.join(format!("q{log}"));
        let mut segments: Vec<u32> =
            std::fs::read_dir(&dir)?.filter_map(|d| segment_number(d.ok()?.file_name().to_str()?)).collect();
        segments.sort_unstable();
        // The newest file is the active one.
        segments.pop();
        let mut unlinked = false;
        for no in segments.into_iter().filter(|no| (log, *no) > resume) {
            if examined == FILES_PER_PASS {
                if unlinked {
                    sync_dir(&dir)?;
                }
                return Ok((freed, (log, no - 1)));
            }
            examined += 1;
            let path = segment_path(&dir, no);
            let len = std::fs::metadata(&path)?.len();
            // A sealed file's index is written by its roll; without one that
            // matches, the file is left for a later pass or the next boot.
            let Some(rows) = index_file::load(&index_path(&dir, no), len) else { continue };
            if !is_dead(&rows, &store.read().expect("store lock"), checkpointed) {
                continue;
            }
            files.remove(log, no);
            std::fs::remove_file(&path)?;
            std::fs::remove_file(index_path(&dir, no))?;
            freed.files += 1;
            freed.bytes += len;
            unlinked = true;
        }
        if unlinked {
            sync_dir(&dir)?;
        }
    }
    Ok((freed, (0, 0)))
}

/// Whether nothing in a sealed file with these index rows is still needed.
fn is_dead(rows: &[IndexRow], store: &Store, checkpointed: u64) -> bool {
    rows.iter().all(|row| {
        row.id.index <= checkpointed
            && row.span.is_none_or(|span| {
                store
                    .partition(span.queue, span.partition)
                    .is_none_or(|p| span.first_offset + span.count as u64 <= p.txns_start)
            })
    })
}
