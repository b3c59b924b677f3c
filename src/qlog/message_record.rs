//! The message record: one append, the messages of one push for one
//! partition after dedup.
//!
//! Body: kind `1`, then as LEB128 varints term, index, queue, partition,
//! first offset and count, then the timestamp (µs since the epoch) as i64
//! LE, then `count` 16-byte transactionId hashes, then the pieces that hold
//! the `count` messages in order. A piece is one message,
//! `[flags u8: 0 raw, 1 zstd][stored length varint]([raw length varint] if
//! zstd)[bytes]`, or a Kafka record batch of several (format 5),
//! `[2][messages varint][producerSub: 0, or its length + 1, varint][its
//! UTF-8][batch length varint][the batch]` (`kafka_batch.rs`).

use super::kafka_batch::KafkaBatch;
use super::record::{put_varint, Fields, RecordKind};
use crate::log_id::LogId;
use bytes::Bytes;
use std::cell::RefCell;
use zstd::bulk::{Compressor, Decompressor};

/// Payloads below this size are never compressed.
pub const COMPRESS_MIN_BYTES: usize = 512;
const FLAG_ZSTD: u8 = 1;
pub(super) const FLAG_KAFKA_BATCH: u8 = 2;

/// Where an append's messages sit in their partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSpan {
    pub queue: u64,
    pub partition: u64,
    pub first_offset: u64,
    pub count: u32,
}

/// One payload as the qlog stores it. Compression is node-local and happens
/// before a payload reaches the sequencer, on the thread of the request that
/// brought it; `raw` is the one point where a read decompresses. The bytes
/// are shared: a record read back holds slices of the one buffer its body
/// was read into, so a fetch copies a payload only into its answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StoredPayload {
    Raw(Bytes),
    Zstd { raw_len: u32, bytes: Bytes },
}

thread_local! {
    /// One zstd context per thread and level: setting one up costs more than
    /// compressing a small payload with it.
    static COMPRESSOR: RefCell<Option<(i32, Compressor<'static>)>> = const { RefCell::new(None) };
    /// And one for reading: a fresh context costs more than the payload.
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// How much of a payload the incompressibility test reads: eight windows
/// of 64 bytes spread over it (or all of a payload of 512 bytes or less).
const WINDOWS: usize = 8;
const WINDOW_BYTES: usize = 64;

/// Whether trying zstd would be wasted: the sampled bytes carry more than
/// 7.2 bits each of collision (Rényi order-2) entropy, which never exceeds
/// the Shannon entropy, so no entropy coder saves a tenth. Random bytes
/// measure about 7.4 here. Encrypted, already compressed and random payloads
/// are then stored raw without the attempt, which costs more than the test.
/// A payload whose only redundancy is long repeats of high-entropy bytes is
/// missed, and stored raw.
fn looks_incompressible(raw: &[u8]) -> bool {
    // Four histograms, so consecutive bytes do not wait on each other's count.
    let mut counts = [[0u16; 256]; 4];
    let mut count = |window: &[u8]| {
        let mut quads = window.chunks_exact(4);
        for q in &mut quads {
            counts[0][q[0] as usize] += 1;
            counts[1][q[1] as usize] += 1;
            counts[2][q[2] as usize] += 1;
            counts[3][q[3] as usize] += 1;
        }
        for b in quads.remainder() {
            counts[0][*b as usize] += 1;
        }
    };
    let n = if raw.len() <= WINDOWS * WINDOW_BYTES {
        count(raw);
        raw.len()
    } else {
        let stride = (raw.len() - WINDOW_BYTES) / (WINDOWS - 1);
        for w in 0..WINDOWS {
            count(&raw[w * stride..w * stride + WINDOW_BYTES]);
        }
        WINDOWS * WINDOW_BYTES
    };
    let squares: u64 = (0..256)
        .map(|i| {
            let c = u64::from(counts[0][i] + counts[1][i] + counts[2][i] + counts[3][i]);
            c * c
        })
        .sum();
    // H2 = -log2(Σc² / n²) > 7.2  ⇔  Σc² · 2^7.2 < n², with 2^7.2 ≈ 147.03
    squares * 147 < (n * n) as u64
}

impl StoredPayload {
    /// Compresses a payload of at least 512 bytes at `level` (0 = off)
    /// unless that saves less than a tenth.
    pub fn prepare(raw: Vec<u8>, level: i32) -> Self {
        if level == 0 || raw.len() < COMPRESS_MIN_BYTES || looks_incompressible(&raw) {
            return Self::Raw(raw.into());
        }
        let z = COMPRESSOR.with_borrow_mut(|slot| {
            if slot.as_ref().is_none_or(|(l, _)| *l != level) {
                let mut compressor = Compressor::new(level).expect("a zstd level in 1..=22 makes a compressor");
                if level == 1 {
                    // Level 1's strategy with an acceleration of 1 finds the
                    // same matches, and zstd then stores literals without
                    // Huffman coding: building a Huffman table for each
                    // payload of about a kilobyte was a third of the
                    // compression's time and saves a few bytes at most.
                    compressor
                        .set_parameter(zstd::zstd_safe::CParameter::TargetLength(1))
                        .expect("zstd takes a target length for level 1");
                }
                *slot = Some((level, compressor));
            }
            slot.as_mut().expect("set above").1.compress(&raw).ok()
        });
        match z {
            Some(bytes) if bytes.len() * 10 <= raw.len() * 9 => {
                Self::Zstd { raw_len: raw.len() as u32, bytes: bytes.into() }
            }
            _ => Self::Raw(raw.into()),
        }
    }

    /// The payload as it was pushed: the stored bytes themselves when stored
    /// raw, decompressed into a buffer of its own otherwise.
    pub fn raw(&self) -> Result<Bytes, MessageRecordError> {
        match self {
            Self::Raw(b) => Ok(b.clone()),
            Self::Zstd { raw_len, bytes } => DECOMPRESSOR.with_borrow_mut(|slot| {
                if slot.is_none() {
                    *slot = Some(Decompressor::new().map_err(MessageRecordError::Decompress)?);
                }
                let d = slot.as_mut().expect("set above");
                d.decompress(bytes, *raw_len as usize).map(Bytes::from).map_err(MessageRecordError::Decompress)
            }),
        }
    }

    /// The payload's size before compression.
    pub fn raw_len(&self) -> usize {
        match self {
            Self::Raw(b) => b.len(),
            Self::Zstd { raw_len, .. } => *raw_len as usize,
        }
    }
}

/// What one place of a message record holds: one message, or a Kafka
/// batch of several as its producer sent it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Piece {
    Message(StoredPayload),
    Kafka(KafkaBatch),
}

impl Piece {
    /// The messages, and so the offsets, it holds.
    pub fn count(&self) -> u32 {
        match self {
            Self::Message(_) => 1,
            Self::Kafka(batch) => batch.count,
        }
    }

    /// Its bytes as the qlog stores them.
    pub fn stored_len(&self) -> usize {
        match self {
            Self::Message(StoredPayload::Raw(b)) | Self::Message(StoredPayload::Zstd { bytes: b, .. }) => b.len(),
            Self::Kafka(batch) => batch.bytes.len(),
        }
    }
}

/// A message record as written and as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub id: LogId,
    pub span: MessageSpan,
    pub timestamp_us: i64,
    pub hashes: Vec<[u8; 16]>,
    /// The `span.count` messages, in order.
    pub pieces: Vec<Piece>,
}

#[derive(Debug, thiserror::Error)]
pub enum MessageRecordError {
    #[error("message record body is shorter than its fields say")]
    Short,
    #[error("message record payload does not decompress: {0}")]
    Decompress(std::io::Error),
    #[error("message record's pieces hold {held} messages where its span counts {count}")]
    Miscounted { held: u64, count: u32 },
    #[error("message record's piece of flags {0} is of no kind this build knows")]
    UnknownPiece(u8),
    #[error("message record's Kafka batch: {0}")]
    KafkaBatch(#[from] super::kafka_batch::KafkaBatchError),
}

impl MessageRecord {
    /// The pieces, each with the offset of its first message.
    pub fn placed_pieces(&self) -> impl Iterator<Item = (u64, &Piece)> {
        self.pieces.iter().scan(self.span.first_offset, |next, piece| {
            let at = *next;
            *next += u64::from(piece.count());
            Some((at, piece))
        })
    }

    /// The piece holding `offset`, with the offset of its first message.
    pub fn piece_at(&self, offset: u64) -> Option<(u64, &Piece)> {
        self.placed_pieces().find(|(at, piece)| (*at..at + u64::from(piece.count())).contains(&offset))
    }

    /// Appends the body to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let payload_bytes: usize = self.pieces.iter().map(|p| p.stored_len() + 11).sum();
        out.reserve(69 + 16 * self.hashes.len() + payload_bytes);
        out.push(RecordKind::Message as u8);
        for v in [self.id.term, self.id.index, self.span.queue, self.span.partition, self.span.first_offset] {
            put_varint(out, v);
        }
        put_varint(out, self.span.count.into());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
        for h in &self.hashes {
            out.extend_from_slice(h);
        }
        let mut offset = self.span.first_offset;
        for p in &self.pieces {
            match p {
                Piece::Kafka(batch) => {
                    out.push(FLAG_KAFKA_BATCH);
                    put_varint(out, batch.count.into());
                    match &batch.producer_sub {
                        Some(sub) => {
                            put_varint(out, sub.len() as u64 + 1);
                            out.extend_from_slice(sub.as_bytes());
                        }
                        None => put_varint(out, 0),
                    }
                    put_varint(out, batch.bytes.len() as u64);
                    batch.write_placed(out, offset, self.timestamp_us);
                }
                Piece::Message(StoredPayload::Zstd { raw_len, bytes }) => {
                    out.push(FLAG_ZSTD);
                    put_varint(out, bytes.len() as u64);
                    put_varint(out, (*raw_len).into());
                    out.extend_from_slice(bytes);
                }
                Piece::Message(StoredPayload::Raw(bytes)) => {
                    out.push(0);
                    put_varint(out, bytes.len() as u64);
                    out.extend_from_slice(bytes);
                }
            }
            offset += u64::from(p.count());
        }
    }

    /// Reads the fields in front of the payloads (kind byte included).
    pub fn decode_span(body: &[u8]) -> Result<(LogId, MessageSpan, i64), MessageRecordError> {
        let mut f = Fields::new(body);
        Self::head(&mut f).ok_or(MessageRecordError::Short)
    }

    /// The fields in front of the hashes: kind byte, entry id, span and timestamp.
    pub(super) fn head(f: &mut Fields<'_>) -> Option<(LogId, MessageSpan, i64)> {
        f.u8()?;
        let id = LogId::new(f.varint()?, f.varint()?);
        let span = MessageSpan {
            queue: f.varint()?,
            partition: f.varint()?,
            first_offset: f.varint()?,
            count: f.varint()?.try_into().ok()?,
        };
        Some((id, span, f.i64()?))
    }

    /// Decodes a whole body; payloads stay as stored, in a copy of `body`.
    pub fn decode(body: &[u8]) -> Result<Self, MessageRecordError> {
        Self::decode_shared(&Bytes::copy_from_slice(body))
    }

    /// Decodes a whole body; payloads stay as stored, as slices of `body`.
    pub fn decode_shared(body: &Bytes) -> Result<Self, MessageRecordError> {
        let mut f = Fields::new(body);
        let (id, span, timestamp_us) = Self::head(&mut f).ok_or(MessageRecordError::Short)?;
        let n = span.count as usize;
        if n > body.len() / 16 {
            return Err(MessageRecordError::Short);
        }
        let hashes = (0..n).map(|_| f.array16()).collect::<Option<Vec<_>>>().ok_or(MessageRecordError::Short)?;
        let mut pieces = Vec::new();
        let mut held = 0u64;
        while held < u64::from(span.count) {
            let flags = f.u8().ok_or(MessageRecordError::Short)?;
            let piece = match flags {
                0 | FLAG_ZSTD => {
                    let stored = f.varint().ok_or(MessageRecordError::Short)? as usize;
                    if flags == FLAG_ZSTD {
                        let raw_len =
                            f.varint().and_then(|v| u32::try_from(v).ok()).ok_or(MessageRecordError::Short)?;
                        let bytes = body.slice_ref(f.bytes(stored).ok_or(MessageRecordError::Short)?);
                        Piece::Message(StoredPayload::Zstd { raw_len, bytes })
                    } else {
                        Piece::Message(StoredPayload::Raw(
                            body.slice_ref(f.bytes(stored).ok_or(MessageRecordError::Short)?),
                        ))
                    }
                }
                FLAG_KAFKA_BATCH => {
                    let count = f.varint().ok_or(MessageRecordError::Short)?;
                    let producer_sub = match f.varint().ok_or(MessageRecordError::Short)? as usize {
                        0 => None,
                        n => {
                            let sub = f.bytes(n - 1).ok_or(MessageRecordError::Short)?;
                            Some(String::from_utf8_lossy(sub).into_owned())
                        }
                    };
                    let stored = f.varint().ok_or(MessageRecordError::Short)? as usize;
                    let bytes = body.slice_ref(f.bytes(stored).ok_or(MessageRecordError::Short)?);
                    let batch = KafkaBatch::new(bytes, producer_sub)?;
                    if u64::from(batch.count) != count {
                        return Err(MessageRecordError::Miscounted { held: count, count: batch.count });
                    }
                    Piece::Kafka(batch)
                }
                other => return Err(MessageRecordError::UnknownPiece(other)),
            };
            held += u64::from(piece.count());
            pieces.push(piece);
        }
        if held != u64::from(span.count) {
            return Err(MessageRecordError::Miscounted { held, count: span.count });
        }
        Ok(Self { id, span, timestamp_us, hashes, pieces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(r: &MessageRecord) -> Vec<u8> {
        let mut body = Vec::new();
        r.encode_into(&mut body);
        body
    }

    /// `len` random bytes, so nothing compresses them.
    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect()
    }

    fn record(raw: Vec<Vec<u8>>, level: i32) -> MessageRecord {
        let payloads: Vec<StoredPayload> = raw.into_iter().map(|p| StoredPayload::prepare(p, level)).collect();
        MessageRecord {
            id: LogId::new(1, 7),
            span: MessageSpan { queue: 3, partition: 4, first_offset: 10, count: payloads.len() as u32 },
            timestamp_us: 1_700_000_000_000_000,
            hashes: (0..payloads.len()).map(|i| crate::message::transaction_hash(&i.to_string())).collect(),
            pieces: payloads.into_iter().map(Piece::Message).collect(),
        }
    }

    #[test]
    fn round_trips_with_and_without_compression() {
        let raw = vec![b"small".to_vec(), vec![b'a'; 4096], (0..600u32).map(|i| (i * 7919 % 251) as u8).collect()];
        for level in [0, 1, 3] {
            let r = record(raw.clone(), level);
            let back = MessageRecord::decode(&encoded(&r)).unwrap();
            assert_eq!(back, r);
            let payloads: Vec<Vec<u8>> = back
                .pieces
                .iter()
                .map(|p| match p {
                    Piece::Message(p) => p.raw().unwrap().to_vec(),
                    Piece::Kafka(_) => unreachable!("no batch was written"),
                })
                .collect();
            assert_eq!(payloads, raw);
        }
        assert!(
            encoded(&record(raw.clone(), 1)).len() < encoded(&record(raw, 0)).len(),
            "the repetitive payload compresses"
        );
    }

    #[test]
    fn an_incompressible_payload_is_stored_raw() {
        assert!(matches!(StoredPayload::prepare(noise(2048, 0x2545F4914F6CDD1D), 1), StoredPayload::Raw(_)));
    }

    #[test]
    fn text_is_worth_trying_and_noise_is_not() {
        let json: Vec<u8> =
            (0..40).flat_map(|i| format!(r#"{{"order":{i},"sku":"A-{}","qty":3}},"#, i * 37).into_bytes()).collect();
        assert!(!looks_incompressible(&json));
        assert!(matches!(StoredPayload::prepare(json, 1), StoredPayload::Zstd { .. }));
        let noise = noise(4096, 0x9E3779B97F4A7C15);
        assert!(looks_incompressible(&noise[..512]));
        assert!(looks_incompressible(&noise));
    }

    /// A Kafka batch of three beside two single messages: five offsets,
    /// the batch written based at its own first offset.
    fn mixed() -> MessageRecord {
        let records = (0..3)
            .map(|i| protocol::records::PlainRecord {
                timestamp_ms: i,
                key: None,
                value: Some(Bytes::from(vec![b'k'; 600])),
                headers: vec![],
            })
            .collect();
        let produced = protocol::records::ProducedBatch {
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            records,
            wire: bytes::Bytes::new(),
        };
        let bytes = protocol::records::encode_produced(&produced, protocol::records::Compression::Zstd).unwrap();
        let batch = KafkaBatch::new(bytes, Some("billing".into())).unwrap();
        let mut r = record(vec![b"first".to_vec(), b"last".to_vec()], 0);
        r.pieces.insert(1, Piece::Kafka(batch));
        r.span.count = 5;
        r.hashes = (0..5).map(|i| crate::message::transaction_hash(&i.to_string())).collect();
        r
    }

    #[test]
    fn a_kafka_batch_is_a_piece_of_several_messages_placed_at_its_offset() {
        let back = MessageRecord::decode(&encoded(&mixed())).unwrap();
        assert_eq!(back.pieces.iter().map(Piece::count).collect::<Vec<_>>(), [1, 3, 1]);
        let Piece::Kafka(batch) = &back.pieces[1] else { panic!("the batch reads back as one") };
        assert_eq!(batch.producer_sub.as_deref(), Some("billing"));
        let offsets: Vec<i64> = batch.records().unwrap().iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, [11, 12, 13], "the batch is based at the offset after the first message (10)");
        assert_eq!(MessageRecord::decode(&encoded(&back)).unwrap(), back, "placing again changes nothing");
    }

    #[test]
    fn a_short_body_is_an_error_not_a_panic() {
        let body = encoded(&mixed());
        for cut in 0..body.len() {
            assert!(MessageRecord::decode(&body[..cut]).is_err());
        }
        let body = encoded(&record(vec![b"x".to_vec(), vec![b'b'; 1000]], 1));
        for cut in 0..body.len() {
            assert!(MessageRecord::decode(&body[..cut]).is_err());
        }
    }
}
