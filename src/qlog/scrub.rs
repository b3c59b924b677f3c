//! The qlog scrub: every `QUEEN_QLOG_SCRUB_EVERY_S` a thread reads every
//! sealed qlog file at `QUEEN_QLOG_SCRUB_BYTES_PER_S` and verifies each
//! record's checksum, to find damage on one node while it serves rather
//! than at its next boot, as the store's scrub does for the checkpoint. A
//! Kafka fetch sends stored batches from their files without reading them
//! (`batch_places.rs`), so no read checks those records' checksums at run
//! time but this one.
//!
//! A sealed file is immutable: reclaim replaces or unlinks whole files, and
//! an open descriptor keeps reading the file it opened. A record that fails
//! its checksum is read twice more before it counts, as every read of the
//! qlog does; one that still fails ends the process, naming the file and the
//! byte, since boot refuses the same file (`recovery.md`).

use super::record::{read_frame, Frame, FRAME_HEADER};
use super::segment::{segment_number, segment_path};
use crate::storage::{Storage, StorageFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What one read of a file takes, at least.
const CHUNK: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ScrubError {
    #[error("{path}: the record at byte {pos} fails its checksum")]
    Damaged { path: PathBuf, pos: u64 },
    #[error("{path}: the bytes at {pos} are no whole record, in a sealed file")]
    Torn { path: PathBuf, pos: u64 },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// Starts the scrub's thread, unless either setting is 0.
pub fn start(storage: Arc<dyn Storage>, root: PathBuf, every: Duration, bytes_per_s: u64) {
    if every.is_zero() || bytes_per_s == 0 {
        return;
    }
    std::thread::Builder::new()
        .name("qlog-scrub".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let pace = |bytes: usize| std::thread::sleep(Duration::from_secs_f64(bytes as f64 / bytes_per_s as f64));
            match scrub_pass(&*storage, &root, pace) {
                Ok((files, bytes)) => tracing::info!(files, bytes, "qlog scrub pass complete"),
                Err(e) => crate::fatal::exit(&format!("qlog scrub: {e}")),
            }
        })
        .expect("spawn the qlog scrub thread");
}

/// Verifies every sealed file under `root` once, at full speed, on a thread
/// of its own: a boot reads sealed files through their indexes
/// (`boot_scan.rs`), so this pass is what refuses a damaged one, ending the
/// process with the line a boot that read it would have printed.
pub fn verify_after_boot(storage: Arc<dyn Storage>, root: PathBuf) {
    std::thread::Builder::new()
        .name("qlog-verify".into())
        .spawn(move || match scrub_pass(&*storage, &root, |_| {}) {
            Ok((files, bytes)) => tracing::info!(files, bytes, "every sealed qlog file verified after boot"),
            Err(ScrubError::Damaged { path, pos } | ScrubError::Torn { path, pos }) => crate::fatal::exit(&format!(
                "sealed qlog file {} holds a record that fails its checksum at byte {pos}: a sealed file was fsynced before its roll, so this is corruption, not a torn tail",
                path.display()
            )),
            Err(e) => crate::fatal::exit(&format!("qlog verification after boot: {e}")),
        })
        .expect("spawn the qlog verification thread");
}

/// Verifies every sealed file under `root`, calling `pace` after each read
/// with its size; answers the files and bytes verified.
pub fn scrub_pass(storage: &dyn Storage, root: &Path, mut pace: impl FnMut(usize)) -> Result<(u64, u64), ScrubError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScrubError::Io { path, source }
    };
    let (mut files, mut bytes) = (0, 0);
    let mut logs: Vec<PathBuf> = storage
        .list(root)
        .map_err(io(root))?
        .into_iter()
        .filter(|d| d.is_dir && d.name.strip_prefix('q').is_some_and(|n| n.parse::<u64>().is_ok()))
        .map(|d| d.path(root))
        .collect();
    logs.sort();
    for dir in logs {
        let mut segments: Vec<u32> = match storage.list(&dir) {
            Ok(entries) => entries.iter().filter_map(|d| segment_number(&d.name)).collect(),
            // Reclaim removed a deleted queue's log meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir)(e)),
        };
        segments.sort_unstable();
        // The newest file is the active one, still written.
        segments.pop();
        for no in segments {
            let path = segment_path(&dir, no);
            let file = match storage.open(&path, false) {
                Ok(file) => file,
                // Reclaim unlinked it meanwhile.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&path)(e)),
            };
            let len = storage.len(&path).map_err(io(&path))?;
            verify_file(&*file, len, &path, &mut pace)?;
            files += 1;
            bytes += len;
        }
    }
    Ok((files, bytes))
}

/// Verifies every record of the `len` bytes of `file`, reading a chunk at a time.
fn verify_file(file: &dyn StorageFile, len: u64, path: &Path, pace: &mut impl FnMut(usize)) -> Result<(), ScrubError> {
    let io = |source| ScrubError::Io { path: path.to_path_buf(), source };
    let (mut buf, mut buf_at, mut cursor) = (Vec::new(), 0u64, 0usize);
    loop {
        let at = buf_at + cursor as u64;
        if at == len {
            return Ok(());
        }
        match read_frame(&buf, cursor) {
            Frame::Valid { next, .. } => cursor = next,
            Frame::Damaged { next } => {
                let frame_len = next - cursor;
                let mut verified = false;
                for _ in 0..2 {
                    let again = file.read_vec_at(frame_len, at).map_err(io)?;
                    verified |= matches!(read_frame(&again, 0), Frame::Valid { .. });
                }
                if !verified {
                    return Err(ScrubError::Damaged { path: path.to_path_buf(), pos: at });
                }
                cursor = next;
            }
            Frame::Torn | Frame::End => {
                let held = buf.len() - cursor;
                let need = match buf.get(cursor..cursor + 4) {
                    Some(l) => 4 + u32::from_le_bytes(l.try_into().expect("four bytes")) as usize,
                    None => FRAME_HEADER,
                };
                let left = (len - at) as usize;
                if held >= need || need > left {
                    return Err(ScrubError::Torn { path: path.to_path_buf(), pos: at });
                }
                let read = need.max(CHUNK).min(left);
                buf = file.read_vec_at(read, at).map_err(io)?;
                (buf_at, cursor) = (at, 0);
                pace(read);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qlog::record::frame_into;
    use crate::qlog::segment::log_dir;
    use crate::storage::os::OsStorage;

    /// A log of three files: two sealed, of `records` records each, and the
    /// active one.
    fn log(root: &Path, records: usize) -> PathBuf {
        let dir = log_dir(root, 1);
        std::fs::create_dir_all(&dir).unwrap();
        for no in 1..=3 {
            let mut bytes = Vec::new();
            for i in 0..records {
                let body: Vec<u8> = std::iter::once(1u8).chain((0..(i * 37) % 3000).map(|b| b as u8)).collect();
                frame_into(&body, &mut bytes);
            }
            std::fs::write(segment_path(&dir, no), bytes).unwrap();
        }
        dir
    }

    #[test]
    fn every_sealed_file_is_read_whole_and_the_active_one_is_left() {
        let root = tempfile::tempdir().unwrap();
        let dir = log(root.path(), 2000);
        let sealed: u64 = (1..=2).map(|no| std::fs::metadata(segment_path(&dir, no)).unwrap().len()).sum();
        let mut paced = 0;
        let (files, bytes) = scrub_pass(&OsStorage, root.path(), |n| paced += n).unwrap();
        assert_eq!((files, bytes), (2, sealed));
        assert!(sealed > 2 * CHUNK as u64, "the files span several chunks");
        // A record across the end of a chunk is read again with the next.
        assert!((sealed..sealed + sealed / 100).contains(&(paced as u64)), "every byte read was paced: {paced}");
    }

    #[test]
    fn a_flipped_bit_in_a_sealed_file_is_named_and_one_in_the_active_file_is_not_the_scrubs() {
        let root = tempfile::tempdir().unwrap();
        let dir = log(root.path(), 300);
        let active = segment_path(&dir, 3);
        let mut bytes = std::fs::read(&active).unwrap();
        bytes[100] ^= 1;
        std::fs::write(&active, &bytes).unwrap();
        scrub_pass(&OsStorage, root.path(), |_| {}).expect("the active file is the writer's and boot's");

        let sealed = segment_path(&dir, 2);
        let mut bytes = std::fs::read(&sealed).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        std::fs::write(&sealed, &bytes).unwrap();
        let e = scrub_pass(&OsStorage, root.path(), |_| {}).unwrap_err();
        let ScrubError::Damaged { path, pos } = &e else { panic!("not damage: {e}") };
        assert_eq!(path, &sealed);
        assert!(*pos <= at as u64 && at as u64 - pos < 3100, "the damaged record is the one holding byte {at}: {e}");
    }

    #[test]
    fn a_sealed_file_cut_inside_a_record_is_torn() {
        let root = tempfile::tempdir().unwrap();
        let dir = log(root.path(), 50);
        let sealed = segment_path(&dir, 1);
        let bytes = std::fs::read(&sealed).unwrap();
        std::fs::write(&sealed, &bytes[..bytes.len() - 5]).unwrap();
        let e = scrub_pass(&OsStorage, root.path(), |_| {}).unwrap_err();
        assert!(matches!(e, ScrubError::Torn { .. }), "{e}");
    }
}
