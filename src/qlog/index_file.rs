//! The `.qidx` beside a sealed qlog file: one row per record, so a boot finds
//! every record without decoding bodies. It is rebuilt by a scan whenever it
//! is missing or stale, so it is written without an fsync.
//!
//! Layout: magic `QIDX0001`, the qlog file's length u64, the row count u32,
//! the rows (65 bytes each: pos u64, frame length u32, kind u8, term u64,
//! index u64, queue u64, partition u64, first offset u64, count u32; the last
//! four are zero for entry records and stubs), the timestamp i64 (µs; zero
//! for entry records and stubs), then the xxh3 of everything
//! before it as u64.

use super::message_record::MessageSpan;
use super::record::{Fields, RecordKind};
use super::segment::IndexRow;
use crate::log_id::LogId;
use crate::storage::Storage;
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"QIDX0002";

pub fn encode(qlog_len: u64, rows: &[IndexRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(28 + rows.len() * 65);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&qlog_len.to_le_bytes());
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    for r in rows {
        let span = r.span.unwrap_or(MessageSpan { queue: 0, partition: 0, first_offset: 0, count: 0 });
        out.extend_from_slice(&r.pos.to_le_bytes());
        out.extend_from_slice(&r.frame_len.to_le_bytes());
        out.push(r.kind as u8);
        out.extend_from_slice(&r.id.term.to_le_bytes());
        out.extend_from_slice(&r.id.index.to_le_bytes());
        out.extend_from_slice(&span.queue.to_le_bytes());
        out.extend_from_slice(&span.partition.to_le_bytes());
        out.extend_from_slice(&span.first_offset.to_le_bytes());
        out.extend_from_slice(&span.count.to_le_bytes());
        out.extend_from_slice(&r.timestamp_us.to_le_bytes());
    }
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The rows of an index that matches a qlog file of `qlog_len` bytes, or
/// `None` when the index is stale, damaged or missing.
pub fn load(storage: &dyn Storage, path: &Path, qlog_len: u64) -> Option<Vec<IndexRow>> {
    let buf = storage.read(path).ok()?;
    let (data, sum) = buf.split_at(buf.len().checked_sub(8)?);
    if xxh3_64(data) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut f = Fields::new(data);
    if f.bytes(8)? != MAGIC || f.u64()? != qlog_len {
        return None;
    }
    let n = f.u32()? as usize;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let pos = f.u64()?;
        let frame_len = f.u32()?;
        let kind = RecordKind::from_byte(f.u8()?)?;
        let id = LogId::new(f.u64()?, f.u64()?);
        let span = MessageSpan { queue: f.u64()?, partition: f.u64()?, first_offset: f.u64()?, count: f.u32()? };
        let span = (kind == RecordKind::Message).then_some(span);
        rows.push(IndexRow { pos, frame_len, kind, id, span, timestamp_us: f.i64()? });
    }
    f.rest().is_empty().then_some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_loads_only_for_its_own_file_length() {
        let rows = vec![
            IndexRow {
                pos: 0,
                frame_len: 100,
                kind: RecordKind::Message,
                id: LogId::new(1, 1),
                span: Some(MessageSpan { queue: 2, partition: 3, first_offset: 0, count: 4 }),
                timestamp_us: 1_700_000_000_000_000,
            },
            IndexRow {
                pos: 100,
                frame_len: 61,
                kind: RecordKind::Stub,
                id: LogId::new(1, 1),
                span: None,
                timestamp_us: 0,
            },
        ];
        use crate::storage::os::OsStorage;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r00000001.qidx");
        std::fs::write(&path, encode(161, &rows)).unwrap();
        assert_eq!(load(&OsStorage, &path, 161).unwrap(), rows);
        assert!(load(&OsStorage, &path, 162).is_none());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(load(&OsStorage, &path, 161).is_none());
    }
}
