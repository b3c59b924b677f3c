//! Record batches ⇄ plain records. A produce request carries RecordBatch v2
//! (uncompressed or gzip, snappy, lz4, zstd); the broker stores each record
//! as one message, and a fetch answers them as one uncompressed v2 batch per
//! run of offsets.

use crate::decompress;
use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
pub use kafka_protocol::records::Compression;
use kafka_protocol::records::{
    Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
};

/// One record as the broker stores it: what the producer sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainRecord {
    pub timestamp_ms: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// One produced batch: its records and the idempotence fields of its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducedBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The sequence of the first record; -1 without idempotence.
    pub base_sequence: i32,
    pub transactional: bool,
    pub records: Vec<PlainRecord>,
    /// The batch as it came, CRC and compression included; empty for one
    /// made to be encoded.
    pub wire: Bytes,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("the record batch does not decode: {0}")]
    Corrupt(String),
    #[error("record batches of magic {0} are not accepted (only v2)")]
    OldMagic(i8),
    #[error("records do not encode: {0}")]
    Encode(String),
}

/// The size of the largest batch of a record set, as it travels (its
/// length field and the 12 bytes before it), read off the batch headers
/// alone: what Kafka holds against `max.message.bytes`. A batch longer
/// than the bytes left ends the walk uncounted: it is not a batch that
/// travelled, and decoding the set refuses it as corrupt.
pub fn largest_batch_bytes(set: &[u8]) -> usize {
    let mut largest = 0;
    let mut at = 0usize;
    while let Some(length) = set.get(at + 8..at + 12) {
        let size = 12 + i32::from_be_bytes(length.try_into().expect("four bytes")).max(0) as usize;
        if size > set.len() - at {
            break;
        }
        largest = largest.max(size);
        at += size;
    }
    largest
}

/// Decodes every batch of a produce request's record set; what compressed
/// batches expand to is spent from `allowance`.
pub fn decode_produced(
    mut bytes: Bytes,
    allowance: &decompress::Allowance,
) -> Result<Vec<ProducedBatch>, RecordsError> {
    let mut sets = Vec::new();
    while bytes.has_remaining() {
        let before = bytes.clone();
        let set = RecordBatchDecoder::decode_with_custom_compression(&mut bytes, Some(decompress::bounded(allowance)))
            .map_err(|e| RecordsError::Corrupt(format!("{e:#}")))?;
        sets.push((before.slice(..before.len() - bytes.len()), set));
    }
    let mut out = Vec::with_capacity(sets.len());
    for (wire, set) in sets {
        if set.version != 2 {
            return Err(RecordsError::OldMagic(set.version));
        }
        let Some(first) = set.records.first() else { continue };
        // The batch is served as it came, so its records' offsets must be
        // the ones the broker gives them: consecutive from the first.
        if set.records.iter().enumerate().any(|(i, r)| r.offset != first.offset + i as i64) {
            return Err(RecordsError::Corrupt("the batch's record offsets are not consecutive".into()));
        }
        // And its header must say so, as Kafka's LogValidator checks: a
        // consumer takes the next offset from the last offset delta.
        let base_offset = i64::from_be_bytes(wire[..8].try_into().expect("a decoded batch has its header"));
        let last_offset_delta = i32::from_be_bytes(wire[23..27].try_into().expect("a decoded batch has its header"));
        if first.offset != base_offset || i64::from(last_offset_delta) + 1 != set.records.len() as i64 {
            return Err(RecordsError::Corrupt(format!(
                "the batch's offsets from {base_offset} to its last offset delta {last_offset_delta} do not match its {} records",
                set.records.len()
            )));
        }
        out.push(ProducedBatch {
            producer_id: first.producer_id,
            producer_epoch: first.producer_epoch,
            base_sequence: first.sequence,
            transactional: first.transactional,
            records: set.records.into_iter().map(plain).collect(),
            wire,
        });
    }
    Ok(out)
}

/// Decodes a fetch answer's record set, as a consumer does, or a batch the
/// broker stored as produced: each record with its offset. What it
/// decompresses is not bounded: a stored batch was, at its produce. The
/// records of a LogAppendTime batch carry the batch's max timestamp, the
/// time the broker appended it, as a Kafka consumer reads them.
pub fn decode_fetched(mut bytes: Bytes) -> Result<Vec<(i64, PlainRecord)>, RecordsError> {
    let mut out = Vec::new();
    let unbounded = decompress::Allowance::new(isize::MAX as usize);
    while bytes.has_remaining() {
        let appended_ms = log_append_time(&bytes);
        let set = RecordBatchDecoder::decode_with_custom_compression(&mut bytes, Some(decompress::bounded(&unbounded)))
            .map_err(|e| RecordsError::Corrupt(format!("{e:#}")))?;
        out.extend(set.records.into_iter().map(|r| {
            let offset = r.offset;
            let mut record = plain(r);
            if let Some(ms) = appended_ms {
                record.timestamp_ms = ms;
            }
            (offset, record)
        }));
    }
    Ok(out)
}

/// Where a v2 batch's header keeps its attributes, last offset delta and
/// max timestamp, and where the bytes its CRC-32C covers begin.
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const MAX_TIMESTAMP_AT: usize = 35;
const HEADER_BYTES: usize = 61;
/// The attributes bit of a batch whose timestamps are the broker's.
const LOG_APPEND_TIME: u16 = 1 << 3;

/// The max timestamp of the batch `bytes` begins with, when its timestamp
/// type is LogAppendTime.
fn log_append_time(bytes: &[u8]) -> Option<i64> {
    let header = bytes.get(..HEADER_BYTES)?;
    let attributes = u16::from_be_bytes(header[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].try_into().ok()?);
    (attributes & LOG_APPEND_TIME != 0).then(|| max_timestamp(header)).flatten()
}

/// Gives a whole v2 batch the timestamp type of its topic, as Kafka's
/// LogValidator does: LogAppendTime with `append_ms` as its max timestamp,
/// or CreateTime with the producer's max timestamp; the CRC is computed
/// again when a byte it covers changed. Answers whether it changed.
pub fn set_timestamp_type(batch: &mut [u8], append_ms: Option<i64>) -> bool {
    if batch.len() < HEADER_BYTES {
        return false;
    }
    let before = batch[ATTRIBUTES_AT..MAX_TIMESTAMP_AT + 8].to_vec();
    let attributes = u16::from_be_bytes(batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].try_into().expect("two bytes"));
    let attributes = match append_ms {
        Some(ms) => {
            batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&ms.to_be_bytes());
            attributes | LOG_APPEND_TIME
        }
        None => attributes & !LOG_APPEND_TIME,
    };
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    if batch[ATTRIBUTES_AT..MAX_TIMESTAMP_AT + 8] == before[..] {
        return false;
    }
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    true
}

/// The max timestamp field of a whole v2 batch's header.
pub fn max_timestamp(batch: &[u8]) -> Option<i64> {
    let field = batch.get(MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8)?;
    Some(i64::from_be_bytes(field.try_into().expect("eight bytes")))
}

/// Whether a whole v2 batch's timestamp type is LogAppendTime.
pub fn is_log_append_time(batch: &[u8]) -> bool {
    log_append_time(batch).is_some()
}

fn plain(r: Record) -> PlainRecord {
    PlainRecord {
        timestamp_ms: r.timestamp,
        key: r.key,
        value: r.value,
        headers: r.headers.into_iter().map(|(k, v)| (k.as_str().to_string(), v)).collect(),
    }
}

/// Encodes records (with their offsets, ascending and gapless) as one v2
/// batch for a fetch answer: as many from the first as fit in `max_bytes`,
/// and the first even when it alone does not, so that a consumer always
/// progresses (a caller that must not exceed `max_bytes` checks the length).
pub fn encode_fetched(records: &[(i64, PlainRecord)], max_bytes: usize) -> Result<Bytes, RecordsError> {
    let broker = Writer {
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        transactional: false,
        leader_epoch: 0,
    };
    // The encoder starts a new batch wherever offset − sequence changes; a
    // sequence that follows the offset keeps one batch.
    let records: Vec<Record> = records.iter().map(|(offset, r)| broker.record(r, *offset, *offset as i32)).collect();
    let (Some(first), Some(min_timestamp)) = (records.first(), records.iter().map(|r| r.timestamp).min()) else {
        return Ok(Bytes::new());
    };
    // Each record's timestamp is a delta from the batch's smallest; sized
    // from the smallest of all, a record is never smaller than in the batch
    // of those that fit, so the bytes stay within `max_bytes`.
    // The first record is taken whatever its size; the size of those taken
    // is also the encoded batch's capacity.
    let mut size = BATCH_HEADER_BYTES;
    let mut fit = 0;
    for r in &records {
        let with = size + record_size(r, first.offset, min_timestamp);
        if fit > 0 && with > max_bytes {
            break;
        }
        size = with;
        fit += 1;
    }
    encode(&records[..fit], Compression::None, size)
}

/// A v2 batch's fixed fields: base offset 8, length 4, leader epoch 4,
/// magic 1, CRC 4, attributes 2, last offset delta 4, first and max
/// timestamps 16, producer id 8 and epoch 2, base sequence 4, count 4.
const BATCH_HEADER_BYTES: usize = 61;

/// The bytes one record takes in a v2 batch of base offset `base_offset`
/// and first timestamp `min_timestamp`: its length, then attributes,
/// timestamp and offset deltas, key, value and headers, lengths as zigzag
/// varints (-1 for null).
fn record_size(r: &Record, base_offset: i64, min_timestamp: i64) -> usize {
    // Zigzag maps v to 2v or -2v-1; a varint carries 7 bits a byte.
    let long = |v: i64| (64 - (((v << 1) ^ (v >> 63)) as u64 | 1).leading_zeros() as usize).div_ceil(7);
    let bytes = |b: Option<&Bytes>| b.map_or(long(-1), |b| long(b.len() as i64) + b.len());
    let headers: usize = r.headers.iter().map(|(k, v)| long(k.len() as i64) + k.len() + bytes(v.as_ref())).sum();
    let body = 1
        + long(r.timestamp - min_timestamp)
        + long(r.offset - base_offset)
        + bytes(r.key.as_ref())
        + bytes(r.value.as_ref())
        + long(r.headers.len() as i64)
        + headers;
    long(body as i64) + body
}

/// Encodes records as one producer's batch, compressed: what a client sends.
/// The suite's codec tests and the fuzz corpus use it.
pub fn encode_produced(batch: &ProducedBatch, compression: Compression) -> Result<Bytes, RecordsError> {
    let producer = Writer {
        producer_id: batch.producer_id,
        producer_epoch: batch.producer_epoch,
        transactional: batch.transactional,
        leader_epoch: -1,
    };
    let records: Vec<Record> = batch
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let sequence = if batch.base_sequence < 0 { i as i32 } else { batch.base_sequence.wrapping_add(i as i32) };
            producer.record(r, i as i64, sequence)
        })
        .collect();
    encode(&records, compression, 0)
}

/// Who wrote a batch, as its header tells.
struct Writer {
    producer_id: i64,
    producer_epoch: i16,
    transactional: bool,
    leader_epoch: i32,
}

impl Writer {
    fn record(&self, r: &PlainRecord, offset: i64, sequence: i32) -> Record {
        Record {
            transactional: self.transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: self.leader_epoch,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset,
            sequence,
            timestamp: r.timestamp_ms,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: kafka_headers(&r.headers),
        }
    }
}

/// `capacity`: the bytes the batch is expected to take, so the buffer is
/// not grown (and copied) while it is written.
fn encode(records: &[Record], compression: Compression, capacity: usize) -> Result<Bytes, RecordsError> {
    let mut buf = BytesMut::with_capacity(capacity);
    let options = RecordEncodeOptions { version: 2, compression };
    RecordBatchEncoder::encode(&mut buf, records, &options).map_err(|e| RecordsError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}

fn kafka_headers(headers: &[(String, Option<Bytes>)]) -> Vec<(StrBytes, Option<Bytes>)> {
    headers.iter().map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone())).collect()
}
