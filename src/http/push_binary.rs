//! The binary push body (`Content-Type: application/x-queen-push`), the
//! alternative to JSON that the queen-mq client sends with `binary_push`:
//!
//! ```text
//! "QPB1" | u8 flags | [u32 raw_len, when flag 1] | body
//! body:  u32 groups | per group: u16 len, queue | u16 len, partition | u32 n
//!        | n × ([u16 len, transactionId, when flag 4] | u32 len, payload)
//! flag 8 (frames): per group: ... | u32 n | u32 z_len | zstd of n ×
//!        (u32 body_len | u8 0 | u8[16] message id | u16 len, transactionId | payload)
//! ```
//!
//! Flags: 1 the body is one zstd frame, 2 answer with counts only, 4 every
//! item carries a transactionId (empty: the broker mints one), 8 frames.
//!
//! The binary transaction body carries a transaction's pushes the same way:
//!
//! ```text
//! "QTB1" | u8 flags | u32 len, head | u32 groups | groups, as with flag 8
//! ```
//!
//! where head is the JSON transaction body without its pushes, and flag 2
//! asks for counts in place of the pushes' and acks' results.

use super::error::ApiError;
use std::io::Read;

pub const CONTENT_TYPE: &str = "application/x-queen-push";
const MAGIC: &[u8; 4] = b"QPB1";
const TXN_MAGIC: &[u8; 4] = b"QTB1";
const FLAG_ZSTD: u8 = 1;
pub const FLAG_COUNTS: u8 = 2;
const FLAG_TXN: u8 = 4;
const FLAG_FRAMES: u8 = 8;

/// One decoded item: queue, partition, transactionId (none: mint one), payload JSON text.
pub struct BinaryItem {
    pub queue: String,
    pub partition: String,
    pub transaction_id: Option<String>,
    pub payload: Vec<u8>,
}

fn malformed(why: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_binary_body", format!("the binary push body is malformed: {}", why.into()))
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ApiError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| malformed(format!("{what} runs past the end")))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn u16(&mut self, what: &str) -> Result<usize, ApiError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()) as usize)
    }
    fn u32(&mut self, what: &str) -> Result<usize, ApiError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()) as usize)
    }
    fn text16(&mut self, what: &str) -> Result<String, ApiError> {
        let n = self.u16(what)?;
        String::from_utf8(self.take(n, what)?.to_vec()).map_err(|_| malformed(format!("{what} is not UTF-8")))
    }
    fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// Decompresses one zstd frame, refusing to grow past `limit` bytes.
fn unzstd(z: &[u8], limit: usize) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::new();
    let decoder = zstd::stream::read::Decoder::new(z).map_err(|e| malformed(format!("zstd: {e}")))?;
    decoder.take(limit as u64 + 1).read_to_end(&mut out).map_err(|e| malformed(format!("zstd: {e}")))?;
    if out.len() > limit {
        return Err(ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "the decompressed push body is over the limit",
        ));
    }
    Ok(out)
}

fn json_payload(payload: &[u8]) -> Result<Vec<u8>, ApiError> {
    serde_json::from_slice::<serde_json::Value>(payload)
        .map_err(|_| malformed("a payload is not one JSON document"))?;
    Ok(payload.to_vec())
}

/// Decodes a binary push body; answers its items and its flags.
pub fn decode(body: &[u8], limit: usize) -> Result<(Vec<BinaryItem>, u8), ApiError> {
    let mut r = Reader { buf: body, pos: 0 };
    if r.take(4, "magic")? != MAGIC {
        return Err(malformed("it does not start with QPB1"));
    }
    let flags = r.take(1, "flags")?[0];
    let inflated;
    let mut r = if flags & FLAG_ZSTD != 0 {
        let raw_len = r.u32("raw length")?;
        inflated = unzstd(&body[r.pos..], limit.min(raw_len))?;
        Reader { buf: &inflated, pos: 0 }
    } else {
        r
    };
    let items = groups(&mut r, flags, limit)?;
    Ok((items, flags))
}

/// Decodes a binary transaction body (`QTB1`): the JSON head (the
/// transaction without its pushes; empty for none), the pushes as frame
/// groups, and the flags (2: answer with counts).
pub fn decode_transaction(body: &[u8], limit: usize) -> Result<(Vec<u8>, Vec<BinaryItem>, u8), ApiError> {
    let mut r = Reader { buf: body, pos: 0 };
    if r.take(4, "magic")? != TXN_MAGIC {
        return Err(malformed("a binary transaction starts with QTB1"));
    }
    let flags = r.take(1, "flags")?[0];
    let head_len = r.u32("head length")?;
    let head = r.take(head_len, "head")?.to_vec();
    let items = groups(&mut r, FLAG_FRAMES, limit)?;
    Ok((head, items, flags))
}

/// The groups of a body, to its end: `u32 groups | per group ...`.
fn groups(r: &mut Reader<'_>, flags: u8, limit: usize) -> Result<Vec<BinaryItem>, ApiError> {
    let groups = r.u32("group count")?;
    let mut items = Vec::new();
    for _ in 0..groups {
        let queue = r.text16("queue")?;
        let partition = r.text16("partition")?;
        let n = r.u32("item count")?;
        if flags & FLAG_FRAMES != 0 {
            let z_len = r.u32("compressed length")?;
            let frames = unzstd(r.take(z_len, "compressed group")?, limit)?;
            let mut f = Reader { buf: &frames, pos: 0 };
            for _ in 0..n {
                let len = f.u32("frame length")?;
                let mut frame = Reader { buf: f.take(len, "frame")?, pos: 0 };
                frame.take(1 + 16, "frame head")?;
                let txn = frame.text16("transactionId")?;
                let payload = json_payload(&frame.buf[frame.pos..])?;
                items.push(BinaryItem {
                    queue: queue.clone(),
                    partition: partition.clone(),
                    transaction_id: Some(txn).filter(|t| !t.is_empty()),
                    payload,
                });
            }
            if !f.done() {
                return Err(malformed("a group holds more frames than it counts"));
            }
        } else {
            for _ in 0..n {
                let txn = if flags & FLAG_TXN != 0 {
                    Some(r.text16("transactionId")?).filter(|t| !t.is_empty())
                } else {
                    None
                };
                let len = r.u32("payload length")?;
                let payload = json_payload(r.take(len, "payload")?)?;
                items.push(BinaryItem {
                    queue: queue.clone(),
                    partition: partition.clone(),
                    transaction_id: txn,
                    payload,
                });
            }
        }
    }
    if !r.done() {
        return Err(malformed("bytes follow the last group"));
    }
    Ok(items)
}
