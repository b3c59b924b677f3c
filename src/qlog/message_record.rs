//! The message record: one append, the messages of one push for one
//! partition after dedup.
//!
//! Body: kind `1`, term u64, index u64, queue u64, partition u64,
//! first offset u64, count u32, timestamp (µs since the epoch) i64, then
//! `count` 16-byte transactionId hashes, then `count` payloads, each
//! `[flags u8][stored length u32]([raw length u32] if compressed)[bytes]`.

use super::record::{Fields, RecordKind};
use crate::log_id::LogId;

/// Payloads below this size are never compressed.
pub const COMPRESS_MIN_BYTES: usize = 512;
const FLAG_ZSTD: u8 = 1;

/// Where an append's messages sit in their partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSpan {
    pub queue: u64,
    pub partition: u64,
    pub first_offset: u64,
    pub count: u32,
}

/// A message record as written and as read back (payloads always raw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub id: LogId,
    pub span: MessageSpan,
    pub timestamp_us: i64,
    pub hashes: Vec<[u8; 16]>,
    pub payloads: Vec<Vec<u8>>,
}

#[derive(Debug, thiserror::Error)]
pub enum MessageRecordError {
    #[error("message record body is shorter than its fields say")]
    Short,
    #[error("message record payload does not decompress: {0}")]
    Decompress(std::io::Error),
}

impl MessageRecord {
    /// Encodes the body, compressing each payload of at least 512 bytes at
    /// `zstd_level` (0 = off) unless that saves less than a tenth.
    pub fn encode(&self, zstd_level: i32) -> Vec<u8> {
        let payload_bytes: usize = self.payloads.iter().map(|p| p.len() + 9).sum();
        let mut out = Vec::with_capacity(61 + 16 * self.hashes.len() + payload_bytes);
        out.push(RecordKind::Message as u8);
        out.extend_from_slice(&self.id.term.to_le_bytes());
        out.extend_from_slice(&self.id.index.to_le_bytes());
        out.extend_from_slice(&self.span.queue.to_le_bytes());
        out.extend_from_slice(&self.span.partition.to_le_bytes());
        out.extend_from_slice(&self.span.first_offset.to_le_bytes());
        out.extend_from_slice(&self.span.count.to_le_bytes());
        out.extend_from_slice(&self.timestamp_us.to_le_bytes());
        for h in &self.hashes {
            out.extend_from_slice(h);
        }
        for p in &self.payloads {
            match compress(p, zstd_level) {
                Some(z) => {
                    out.push(FLAG_ZSTD);
                    out.extend_from_slice(&(z.len() as u32).to_le_bytes());
                    out.extend_from_slice(&(p.len() as u32).to_le_bytes());
                    out.extend_from_slice(&z);
                }
                None => {
                    out.push(0);
                    out.extend_from_slice(&(p.len() as u32).to_le_bytes());
                    out.extend_from_slice(p);
                }
            }
        }
        out
    }

    /// Reads the fields in front of the payloads (kind byte included).
    pub fn decode_span(body: &[u8]) -> Result<(LogId, MessageSpan, i64), MessageRecordError> {
        let mut f = Fields::new(body);
        Self::head(&mut f).ok_or(MessageRecordError::Short)
    }

    fn head(f: &mut Fields<'_>) -> Option<(LogId, MessageSpan, i64)> {
        f.u8()?;
        let id = LogId::new(f.u64()?, f.u64()?);
        let span = MessageSpan { queue: f.u64()?, partition: f.u64()?, first_offset: f.u64()?, count: f.u32()? };
        Some((id, span, f.i64()?))
    }

    /// Decodes a whole body; this is the one place a stored payload is
    /// decompressed.
    pub fn decode(body: &[u8]) -> Result<Self, MessageRecordError> {
        let mut f = Fields::new(body);
        let (id, span, timestamp_us) = Self::head(&mut f).ok_or(MessageRecordError::Short)?;
        let n = span.count as usize;
        let mut hashes = Vec::with_capacity(n);
        for _ in 0..n {
            hashes.push(f.array16().ok_or(MessageRecordError::Short)?);
        }
        let mut payloads = Vec::with_capacity(n);
        for _ in 0..n {
            let flags = f.u8().ok_or(MessageRecordError::Short)?;
            let stored = f.u32().ok_or(MessageRecordError::Short)? as usize;
            if flags & FLAG_ZSTD != 0 {
                let raw = f.u32().ok_or(MessageRecordError::Short)? as usize;
                let z = f.bytes(stored).ok_or(MessageRecordError::Short)?;
                payloads.push(zstd::bulk::decompress(z, raw).map_err(MessageRecordError::Decompress)?);
            } else {
                payloads.push(f.bytes(stored).ok_or(MessageRecordError::Short)?.to_vec());
            }
        }
        Ok(Self { id, span, timestamp_us, hashes, payloads })
    }
}

fn compress(payload: &[u8], level: i32) -> Option<Vec<u8>> {
    if level == 0 || payload.len() < COMPRESS_MIN_BYTES {
        return None;
    }
    let z = zstd::bulk::compress(payload, level).ok()?;
    // Worth it only when it saves at least a tenth.
    (z.len() * 10 <= payload.len() * 9).then_some(z)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payloads: Vec<Vec<u8>>) -> MessageRecord {
        MessageRecord {
            id: LogId::new(1, 7),
            span: MessageSpan { queue: 3, partition: 4, first_offset: 10, count: payloads.len() as u32 },
            timestamp_us: 1_700_000_000_000_000,
            hashes: payloads.iter().map(|p| crate::message::transaction_hash(&format!("{p:?}"))).collect(),
            payloads,
        }
    }

    #[test]
    fn round_trips_with_and_without_compression() {
        let r =
            record(vec![b"small".to_vec(), vec![b'a'; 4096], (0..600u32).map(|i| (i * 7919 % 251) as u8).collect()]);
        for level in [0, 1, 3] {
            let body = r.encode(level);
            assert_eq!(MessageRecord::decode(&body).unwrap(), r);
        }
        assert!(r.encode(1).len() < r.encode(0).len(), "the repetitive payload compresses");
    }

    #[test]
    fn a_short_body_is_an_error_not_a_panic() {
        let body = record(vec![b"x".to_vec()]).encode(1);
        for cut in 0..body.len() {
            assert!(MessageRecord::decode(&body[..cut]).is_err());
        }
    }
}
