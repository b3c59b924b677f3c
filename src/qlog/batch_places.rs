//! Where a message record's Kafka batches sit in their file, found from the
//! record's head and each piece's few header bytes, never its payloads: a
//! fetch then has the kernel send those byte ranges to the consumer's socket
//! (`sendfile`), and the batches' bytes never enter this process.
//!
//! Nothing here checks the record's xxh3, which covers the whole body, the
//! very bytes this read avoids. Each batch carries its producer's CRC-32C,
//! which consumers check (the Java client by default); the record checksum
//! is checked at boot and by every read that decodes the record.

use super::files::{Location, LogFile};
use super::message_record::{MessageRecord, MessageSpan, FLAG_KAFKA_BATCH};
use super::record::{Fields, RecordKind, FRAME_HEADER};

/// One stored batch: the offsets it holds and its bytes in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedBatch {
    pub first_offset: u64,
    pub count: u32,
    /// Where the batch begins in the file, and its length.
    pub pos: u64,
    pub len: usize,
}

/// What the record at a location holds, as far as a fetch needs to know.
#[derive(Debug, PartialEq, Eq)]
pub enum Places {
    /// Only Kafka batches, in order.
    Batches { span: MessageSpan, batches: Vec<PlacedBatch> },
    /// Messages stored one by one (an HTTP push, a sealed queue's): the
    /// record is to be read and decoded whole.
    Messages { span: MessageSpan },
}

#[derive(Debug, thiserror::Error)]
pub enum PlacesError {
    #[error("reading the qlog: {0}")]
    Io(#[from] std::io::Error),
    #[error("the record at byte {pos} of segment {segment} of log {log} is no message record, or shorter than its fields say")]
    Malformed { log: u64, segment: u32, pos: u64 },
}

/// The first read takes this much of a body: the head, the transactionId
/// hashes of a few hundred messages and the first piece's header.
const PEEK: usize = 4096;

/// The places of the record at `at`, read from `file`.
pub fn batch_places(file: &LogFile, at: Location) -> Result<Places, PlacesError> {
    let malformed = || PlacesError::Malformed { log: at.log, segment: at.segment, pos: at.pos };
    let failed = |e: Option<std::io::Error>| e.map_or_else(malformed, PlacesError::Io);
    let body_len = (at.frame_len as usize).checked_sub(FRAME_HEADER).ok_or_else(malformed)?;
    let mut body = Window { file, body_at: at.pos + FRAME_HEADER as u64, body_len, start: 0, bytes: Vec::new() };
    let (span, head_len) = body
        .parse(0, |f| {
            let kind = *f.clone().bytes(1)?.first()?;
            let (_, span, _) = MessageRecord::head(f)?;
            (kind == RecordKind::Message as u8).then_some(span)
        })
        .map_err(failed)?;
    let mut pos = head_len.checked_add(16 * span.count as usize).ok_or_else(malformed)?;
    let mut next_offset = span.first_offset;
    let mut batches = Vec::new();
    while next_offset < span.first_offset + u64::from(span.count) {
        let (piece, header_len) = body.parse(pos, piece_header).map_err(failed)?;
        let Some((count, len)) = piece else { return Ok(Places::Messages { span }) };
        let begins = pos + header_len;
        if count == 0 || begins + len > body_len {
            return Err(malformed());
        }
        batches.push(PlacedBatch { first_offset: next_offset, count, pos: body.body_at + begins as u64, len });
        next_offset += u64::from(count);
        pos = begins + len;
    }
    Ok(Places::Batches { span, batches })
}

/// A piece's header: for a Kafka batch its message count and stored length,
/// for a message stored on its own nothing (the record is read whole).
fn piece_header(f: &mut Fields<'_>) -> Option<Option<(u32, usize)>> {
    if f.u8()? != FLAG_KAFKA_BATCH {
        return Some(None);
    }
    let count = u32::try_from(f.varint()?).ok()?;
    let producer_sub = f.varint()? as usize;
    if producer_sub > 0 {
        f.bytes(producer_sub - 1)?;
    }
    let len = usize::try_from(f.varint()?).ok()?;
    Some(Some((count, len)))
}

/// Reads of one record's body, a window at a time.
struct Window<'a> {
    file: &'a LogFile,
    /// Where the body begins in the file, and its length.
    body_at: u64,
    body_len: usize,
    /// The body position `bytes` begin at.
    start: usize,
    bytes: Vec<u8>,
}

impl Window<'_> {
    /// `parse` run over the body from `pos`, and how many bytes it took;
    /// the window grows until the fields fit in it or the body ends.
    fn parse<T>(
        &mut self,
        pos: usize,
        mut parse: impl FnMut(&mut Fields<'_>) -> Option<T>,
    ) -> Result<(T, usize), Option<std::io::Error>> {
        if pos >= self.body_len {
            return Err(None);
        }
        let mut want = 64usize;
        loop {
            let left = self.body_len.saturating_sub(pos);
            let bytes = self.at(pos, want.min(left)).map_err(Some)?;
            let mut f = Fields::new(bytes);
            if let Some(v) = parse(&mut f) {
                return Ok((v, f.position()));
            }
            if want >= left {
                return Err(None);
            }
            want *= 4;
        }
    }

    /// `len` bytes of the body from `pos`, read unless the window holds them.
    fn at(&mut self, pos: usize, len: usize) -> std::io::Result<&[u8]> {
        let held = pos >= self.start && pos + len <= self.start + self.bytes.len();
        if !held {
            let read = len.max(PEEK).min(self.body_len - pos);
            self.bytes = self.file.read_vec_at(read, self.body_at + pos as u64)?;
            self.start = pos;
        }
        Ok(&self.bytes[pos - self.start..pos - self.start + len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_id::LogId;
    use crate::qlog::kafka_batch::KafkaBatch;
    use crate::qlog::message_record::{Piece, StoredPayload};
    use crate::qlog::record::frame_with;
    use crate::storage::os::OsStorage;
    use crate::storage::Storage;
    use bytes::Bytes;
    use protocol::records::{encode_produced, Compression, PlainRecord, ProducedBatch};

    fn batch(records: usize, fill: u8) -> Piece {
        let records = (0..records)
            .map(|i| PlainRecord {
                timestamp_ms: i as i64,
                key: None,
                value: Some(Bytes::from(vec![fill; 40])),
                headers: vec![],
            })
            .collect();
        let produced = ProducedBatch {
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            records,
            wire: Bytes::new(),
        };
        let bytes = encode_produced(&produced, Compression::None).unwrap();
        Piece::Kafka(KafkaBatch::new(bytes, Some("a-producer".into())).unwrap())
    }

    /// The record framed, written at byte 100 of a file, and where it is.
    fn stored(pieces: Vec<Piece>) -> (tempfile::TempDir, LogFile, Location, MessageRecord) {
        let count: u32 = pieces.iter().map(Piece::count).sum();
        let record = MessageRecord {
            id: LogId::new(2, 9),
            span: MessageSpan { queue: 3, partition: 4, first_offset: 10, count },
            timestamp_us: 1_700_000_000_000_000,
            hashes: (0..count).map(|i| crate::message::transaction_hash(&i.to_string())).collect(),
            pieces,
        };
        let mut frame = Vec::new();
        frame_with(&mut frame, |out| record.encode_into(out));
        let dir = tempfile::tempdir().unwrap();
        let file = LogFile::new(OsStorage.open(&dir.path().join("segment"), true).unwrap());
        file.write_all_at(&[0xEE; 100], 0).unwrap();
        file.write_all_at(&frame, 100).unwrap();
        file.datasync().unwrap();
        let at = Location { log: 1, segment: 1, pos: 100, frame_len: frame.len() as u32 };
        let back = MessageRecord::decode(&frame[FRAME_HEADER..]).unwrap();
        (dir, file, at, back)
    }

    #[test]
    fn each_batch_is_found_where_a_whole_read_finds_it() {
        // 300 hashes put the first piece past the first window's read.
        let (_dir, file, at, record) = stored(vec![batch(290, b'a'), batch(10, b'b')]);
        let Places::Batches { span, batches } = batch_places(&file, at).unwrap() else {
            panic!("a record of batches is placed")
        };
        assert_eq!(span, record.span);
        assert_eq!(batches.iter().map(|b| (b.first_offset, b.count)).collect::<Vec<_>>(), [(10, 290), (300, 10)]);
        for (placed, piece) in batches.iter().zip(&record.pieces) {
            let Piece::Kafka(whole) = piece else { unreachable!("only batches were stored") };
            assert_eq!(file.read_vec_at(placed.len, placed.pos).unwrap(), whole.bytes, "the batch's own bytes");
        }
    }

    #[test]
    fn a_record_of_single_messages_is_to_be_read_whole() {
        let pieces = vec![Piece::Message(StoredPayload::Raw(Bytes::from_static(b"one")))];
        let (_dir, file, at, record) = stored(pieces);
        assert_eq!(batch_places(&file, at).unwrap(), Places::Messages { span: record.span });
    }

    #[test]
    fn a_location_shorter_than_its_record_is_malformed_not_a_panic() {
        let (_dir, file, at, _) = stored(vec![batch(3, b'c')]);
        for frame_len in 0..at.frame_len {
            let short = Location { frame_len, ..at };
            assert!(matches!(batch_places(&file, short), Err(PlacesError::Malformed { .. })), "{frame_len}");
        }
    }
}
