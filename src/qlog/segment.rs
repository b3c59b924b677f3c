//! One qlog file (`rNNNNNNNN.qlog`) and the scan that reads it back.

use super::entry_record::{EntryRecord, Stub};
use super::message_record::{MessageRecord, MessageSpan};
use super::record::{read_frame, Frame, RecordKind};
use crate::log_id::LogId;
use crate::storage::Storage;
use std::path::{Path, PathBuf};

/// The directory of queue log `id` under the qlog root.
pub fn log_dir(root: &Path, id: u64) -> PathBuf {
    root.join(format!("q{id}"))
}

/// Removes a log directory that holds no qlog file any more, with whatever
/// is left in it (an index without its file, a rewrite's copy).
pub fn remove_log_dir(storage: &dyn Storage, dir: &Path) -> std::io::Result<()> {
    for dirent in storage.list(dir)? {
        storage.remove_file(&dirent.path(dir))?;
    }
    storage.remove_dir(dir)
}

pub fn segment_path(log_dir: &Path, no: u32) -> PathBuf {
    log_dir.join(format!("r{no:08}.qlog"))
}

pub fn index_path(log_dir: &Path, no: u32) -> PathBuf {
    log_dir.join(format!("r{no:08}.qidx"))
}

/// The segment number of a `rNNNNNNNN.qlog` file name.
pub fn segment_number(file_name: &str) -> Option<u32> {
    file_name.strip_prefix('r')?.strip_suffix(".qlog")?.parse().ok()
}

/// The numbers of the qlog files in a log directory, ascending.
pub fn segment_numbers(storage: &dyn Storage, log_dir: &Path) -> std::io::Result<Vec<u32>> {
    let mut numbers: Vec<u32> = storage.list(log_dir)?.iter().filter_map(|e| segment_number(&e.name)).collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// What the index knows of one record without reading its body again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexRow {
    pub pos: u64,
    /// The whole frame, header included.
    pub frame_len: u32,
    pub kind: RecordKind,
    pub id: LogId,
    /// For a message record, where its messages sit.
    pub span: Option<MessageSpan>,
    /// For a message record, when it was stored (0 for other records).
    pub timestamp_us: i64,
}

/// A record that verified but whose body does not parse: the writer never
/// produces one, so it is damage.
#[derive(Debug, thiserror::Error)]
#[error("record at byte {pos} has a valid checksum but an unreadable body")]
pub struct UnreadableBody {
    pub pos: u64,
}

/// The index row of a verified record.
pub fn index_row(pos: usize, next: usize, body: &[u8]) -> Result<IndexRow, UnreadableBody> {
    let unreadable = || UnreadableBody { pos: pos as u64 };
    let kind = RecordKind::from_byte(body[0]).ok_or_else(unreadable)?;
    let (id, span, timestamp_us) = match kind {
        RecordKind::Message => {
            let (id, span, ts) = MessageRecord::decode_span(body).map_err(|_| unreadable())?;
            (id, Some(span), ts)
        }
        RecordKind::Entry | RecordKind::EntryFormat3 => {
            (EntryRecord::decode(body).map_err(|_| unreadable())?.id, None, 0)
        }
        RecordKind::Stub => (Stub::decode(body).map_err(|_| unreadable())?.id, None, 0),
    };
    Ok(IndexRow { pos: pos as u64, frame_len: (next - pos) as u32, kind, id, span, timestamp_us })
}

/// Where a scan stopped short of the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The first byte that is not part of a verified record.
    pub pos: u64,
    /// The frame there failed its checksum (rather than being unwritten space).
    pub checksum_failed: bool,
    /// Records that still verify after the damage: if the store already counts
    /// any of them as durable, the damage is corruption and not a torn tail.
    pub verified_after: Vec<IndexRow>,
}

#[derive(Debug, Default)]
pub struct Scan {
    pub rows: Vec<IndexRow>,
    /// The end of the last verified record before any damage.
    pub valid_end: u64,
    pub damage: Option<Damage>,
}

/// Walks every frame of `buf`, verifying each checksum.
pub fn scan(buf: &[u8]) -> Result<Scan, UnreadableBody> {
    let mut out = Scan::default();
    let mut pos = 0;
    loop {
        match read_frame(buf, pos) {
            Frame::End => break,
            Frame::Valid { body, next } => {
                out.rows.push(index_row(pos, next, body)?);
                pos = next;
            }
            Frame::Torn => {
                out.damage = Some(Damage { pos: pos as u64, checksum_failed: false, verified_after: vec![] });
                break;
            }
            Frame::Damaged { next } => {
                out.damage =
                    Some(Damage { pos: pos as u64, checksum_failed: true, verified_after: verified_after(buf, next) });
                break;
            }
        }
    }
    out.valid_end = out.damage.as_ref().map_or(pos as u64, |d| d.pos);
    Ok(out)
}

/// The records that verify after a damaged one, following lengths as far as
/// they stay plausible.
fn verified_after(buf: &[u8], mut pos: usize) -> Vec<IndexRow> {
    let mut rows = Vec::new();
    loop {
        match read_frame(buf, pos) {
            Frame::Valid { body, next } => {
                if let Ok(row) = index_row(pos, next, body) {
                    rows.push(row);
                }
                pos = next;
            }
            Frame::Damaged { next } => pos = next,
            Frame::Torn | Frame::End => return rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qlog::record::frame_into;

    fn stub(index: u64) -> Vec<u8> {
        Stub { id: LogId::new(1, index), home: 0, copies: 2, ordinal: 1, digest: [7; 16] }.encode()
    }

    #[test]
    fn a_torn_tail_stops_the_scan_and_damage_reports_later_records() {
        let mut buf = Vec::new();
        for i in 1..=3 {
            frame_into(&stub(i), &mut buf);
        }
        let whole = scan(&buf).unwrap();
        assert_eq!(whole.rows.len(), 3);
        assert!(whole.damage.is_none());

        let torn = scan(&buf[..buf.len() - 5]).unwrap();
        assert_eq!(torn.rows.len(), 2);
        assert_eq!(torn.valid_end, 122);
        assert!(!torn.damage.unwrap().checksum_failed);

        let mut damaged = buf.clone();
        damaged[70] ^= 0xff;
        let s = scan(&damaged).unwrap();
        assert_eq!(s.rows.len(), 1);
        let d = s.damage.unwrap();
        assert!(d.checksum_failed);
        assert_eq!(d.verified_after.iter().map(|r| r.id.index).collect::<Vec<_>>(), vec![3]);
    }
}
