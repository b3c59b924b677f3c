//! What a boot reads of the qlog before recovery decides anything: every log
//! and every file's records. A sealed file is known by its `.qidx` when the
//! index matches the file's length and its rows tile the file: the file
//! itself is not read, so a boot after a clean stop costs the files' indexes,
//! not the messages stored, and every record of it is verified right after
//! boot instead (`qlog::scrub::verify_after_boot`), which ends the process
//! on damage as the boot did. A sealed file without a matching index is read
//! whole, every checksum verified, and its index rebuilt. The active file is
//! always scanned, and may end in a torn tail.

use super::index_file;
use super::record::{read_frame, Frame};
use super::segment::{index_path, scan, segment_numbers, segment_path, Damage, IndexRow, Scan, UnreadableBody};
use super::segment::{log_dir, remove_log_dir};
use crate::storage::{read_verified, Storage};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct SegmentScan {
    pub no: u32,
    pub path: PathBuf,
    pub len: u64,
    pub rows: Vec<IndexRow>,
}

#[derive(Debug)]
pub struct LogScan {
    pub id: u64,
    pub dir: PathBuf,
    /// Every file, oldest first; the last is the active one.
    pub segments: Vec<SegmentScan>,
    /// Where the active file stops verifying, if it does before its end.
    pub active_damage: Option<Damage>,
}

#[derive(Debug, thiserror::Error)]
pub enum BootScanError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("sealed qlog file {path} holds a record that fails its checksum at byte {pos}: a sealed file was fsynced before its roll, so this is corruption, not a torn tail")]
    SealedCorrupt { path: PathBuf, pos: u64 },
    #[error("qlog file {path} holds a record at byte {pos} whose checksum verifies but whose body is unreadable")]
    UnreadableBody { path: PathBuf, pos: u64 },
    #[error("{path} is not a qlog log directory name (q<id>) or holds no qlog file")]
    StrayLogDir { path: PathBuf },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BootScanError {
    let path = path.to_path_buf();
    move |source| BootScanError::Io { path, source }
}

/// Scans every `q<id>/` under `root`.
pub fn scan_logs(storage: &dyn Storage, root: &Path) -> Result<Vec<LogScan>, BootScanError> {
    let mut ids = Vec::new();
    for dirent in storage.list(root).map_err(io(root))? {
        if !dirent.is_dir {
            continue;
        }
        let path = dirent.path(root);
        let id = dirent.name.strip_prefix('q').and_then(|n| n.parse::<u64>().ok());
        let id = id.ok_or_else(|| BootScanError::StrayLogDir { path: path.clone() })?;
        // A crash between creating a log's directory and its first file, or
        // while reclaim removed a deleted queue's log, leaves a directory with
        // no qlog file: nothing in it is needed.
        if segment_numbers(storage, &path).map_err(io(&path))?.is_empty() {
            remove_log_dir(storage, &path).map_err(io(&path))?;
            continue;
        }
        ids.push(id);
    }
    ids.sort_unstable();
    ids.into_iter().map(|id| scan_log(storage, root, id)).collect()
}

fn scan_log(storage: &dyn Storage, root: &Path, id: u64) -> Result<LogScan, BootScanError> {
    let dir = log_dir(root, id);
    let numbers = segment_numbers(storage, &dir).map_err(io(&dir))?;
    let Some(&active_no) = numbers.last() else {
        return Err(BootScanError::StrayLogDir { path: dir });
    };
    let mut segments = Vec::with_capacity(numbers.len());
    let mut active_damage = None;
    for no in numbers {
        let path = segment_path(&dir, no);
        let (len, rows) = if no == active_no {
            let (buf, s) = read_verified(storage, &path, scan_intact).map_err(io(&path))?;
            let s = s.map_err(|e| BootScanError::UnreadableBody { path: path.clone(), pos: e.pos })?;
            active_damage = s.damage;
            (buf.len() as u64, s.rows)
        } else if let Some(indexed) = indexed_rows(storage, &dir, no, &path)? {
            indexed
        } else {
            let check = |b: &[u8]| {
                let rows = sealed_rows(storage, &dir, no, &path, b);
                let verified = rows.is_ok();
                (rows, verified)
            };
            let (buf, rows) = read_verified(storage, &path, check).map_err(io(&path))?;
            (buf.len() as u64, rows?)
        };
        segments.push(SegmentScan { no, path, len, rows });
    }
    Ok(LogScan { id, dir, segments, active_damage })
}

/// A scan of a file, and whether every frame of it verified.
pub fn scan_intact(buf: &[u8]) -> (Result<Scan, UnreadableBody>, bool) {
    let s = scan(buf);
    let intact = s.as_ref().is_ok_and(|s| s.damage.is_none());
    (s, intact)
}

/// A sealed file's length and rows from its `.qidx`, without reading the
/// file: `None` when the index is missing, stale or does not tile the file.
fn indexed_rows(
    storage: &dyn Storage,
    dir: &Path,
    no: u32,
    path: &Path,
) -> Result<Option<(u64, Vec<IndexRow>)>, BootScanError> {
    let len = storage.len(path).map_err(io(path))?;
    let Some(rows) = index_file::load(storage, &index_path(dir, no), len) else { return Ok(None) };
    let mut expected = 0u64;
    for r in &rows {
        if r.pos != expected {
            return Ok(None);
        }
        expected = r.pos + u64::from(r.frame_len);
    }
    Ok((expected == len).then_some((len, rows)))
}

/// The rows of a sealed file, every checksum verified.
fn sealed_rows(
    storage: &dyn Storage,
    dir: &Path,
    no: u32,
    path: &Path,
    buf: &[u8],
) -> Result<Vec<IndexRow>, BootScanError> {
    let corrupt = |pos| BootScanError::SealedCorrupt { path: path.to_path_buf(), pos };
    if let Some(rows) = index_file::load(storage, &index_path(dir, no), buf.len() as u64) {
        let mut expected = 0u64;
        for r in &rows {
            match read_frame(buf, r.pos as usize) {
                Frame::Valid { next, .. } if r.pos == expected && next as u64 == r.pos + r.frame_len as u64 => {
                    expected = next as u64
                }
                _ => return Err(corrupt(r.pos)),
            }
        }
        if expected == buf.len() as u64 {
            return Ok(rows);
        }
    }
    let s = scan(buf).map_err(|e| BootScanError::UnreadableBody { path: path.to_path_buf(), pos: e.pos })?;
    if let Some(d) = s.damage {
        return Err(corrupt(d.pos));
    }
    let qidx = index_path(dir, no);
    storage.write(&qidx, &index_file::encode(buf.len() as u64, &s.rows)).map_err(io(&qidx))?;
    Ok(s.rows)
}
