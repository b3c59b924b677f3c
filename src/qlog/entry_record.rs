//! Entry records and their stubs.
//!
//! Every log an entry touches holds a payload-free record of it, so that each
//! log can prove after a crash that it holds its part: the whole entry record
//! in the lowest touched log, and a 61-byte stub naming it in the others.
//!
//! Entry body: kind `4`, then as LEB128 varints term, leader (the node id
//! that led in the term), index, copies and the touched log ids (`copies` of
//! them, ascending), then the encoded effects. Format 3 wrote kind `2` with
//! no leader; such a record reads as led by `SINGLE_NODE`.
//! Stub body (49 bytes, 61 framed): kind `3`, term u64, index u64, home log
//! u64, copies u32, ordinal u32 (1.. in the touched list), and the xxh3-128 of
//! the entry body.

use super::record::{put_varint, Fields, RecordKind, FRAME_HEADER};
use crate::log_id::{LogId, SINGLE_NODE};
use xxhash_rust::xxh3::xxh3_128;

pub const STUB_BODY_BYTES: usize = 49;
pub const STUB_FRAMED_BYTES: usize = STUB_BODY_BYTES + FRAME_HEADER;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRecord {
    pub id: LogId,
    /// The node that led in `id.term` and wrote the entry.
    pub leader: u64,
    /// Every log the entry touches, ascending; the first holds this record.
    pub touched: Vec<u64>,
    /// The planner's effects, opaque to the qlog.
    pub effects: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stub {
    pub id: LogId,
    pub home: u64,
    pub copies: u32,
    pub ordinal: u32,
    pub digest: [u8; 16],
}

#[derive(Debug, thiserror::Error)]
#[error("{0} record body is malformed")]
pub struct MalformedRecord(pub &'static str);

impl EntryRecord {
    /// The body of the entry record with these fields, built without one.
    pub fn encode_parts(id: LogId, leader: u64, touched: &[u64], effects: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(41 + 10 * touched.len() + effects.len());
        out.push(RecordKind::Entry as u8);
        put_varint(&mut out, id.term);
        put_varint(&mut out, leader);
        put_varint(&mut out, id.index);
        put_varint(&mut out, touched.len() as u64);
        for log in touched {
            put_varint(&mut out, *log);
        }
        out.extend_from_slice(effects);
        out
    }

    pub fn decode(body: &[u8]) -> Result<Self, MalformedRecord> {
        let bad = || MalformedRecord("entry");
        let mut f = Fields::new(body);
        let kind = f.u8().and_then(RecordKind::from_byte).ok_or_else(bad)?;
        let term = f.varint().ok_or_else(bad)?;
        let leader = match kind {
            RecordKind::Entry => f.varint().ok_or_else(bad)?,
            RecordKind::EntryFormat3 => SINGLE_NODE,
            _ => return Err(bad()),
        };
        let id = LogId::new(term, f.varint().ok_or_else(bad)?);
        let copies = f.varint().ok_or_else(bad)? as usize;
        if copies == 0 || copies > body.len() {
            return Err(bad());
        }
        let touched = (0..copies).map(|_| f.varint().ok_or_else(bad)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { id, leader, touched, effects: f.rest().to_vec() })
    }

    /// What every stub of this entry must carry.
    pub fn digest(body: &[u8]) -> [u8; 16] {
        xxh3_128(body).to_le_bytes()
    }
}

impl Stub {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(STUB_BODY_BYTES);
        out.push(RecordKind::Stub as u8);
        out.extend_from_slice(&self.id.term.to_le_bytes());
        out.extend_from_slice(&self.id.index.to_le_bytes());
        out.extend_from_slice(&self.home.to_le_bytes());
        out.extend_from_slice(&self.copies.to_le_bytes());
        out.extend_from_slice(&self.ordinal.to_le_bytes());
        out.extend_from_slice(&self.digest);
        debug_assert_eq!(out.len(), STUB_BODY_BYTES);
        out
    }

    pub fn decode(body: &[u8]) -> Result<Self, MalformedRecord> {
        let bad = || MalformedRecord("stub");
        if body.len() != STUB_BODY_BYTES {
            return Err(bad());
        }
        let mut f = Fields::new(body);
        f.u8().ok_or_else(bad)?;
        Ok(Self {
            id: LogId::new(f.u64().ok_or_else(bad)?, f.u64().ok_or_else(bad)?),
            home: f.u64().ok_or_else(bad)?,
            copies: f.u32().ok_or_else(bad)?,
            ordinal: f.u32().ok_or_else(bad)?,
            digest: f.array16().ok_or_else(bad)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qlog::record::frame_into;

    #[test]
    fn entry_and_stub_round_trip_and_a_framed_stub_is_61_bytes() {
        let e = EntryRecord { id: LogId::new(1, 9), leader: 3, touched: vec![1, 5, 8], effects: b"effects".to_vec() };
        let body = EntryRecord::encode_parts(e.id, e.leader, &e.touched, &e.effects);
        assert_eq!(EntryRecord::decode(&body).unwrap(), e);
        let s = Stub { id: e.id, home: 1, copies: 3, ordinal: 2, digest: EntryRecord::digest(&body) };
        let mut framed = Vec::new();
        frame_into(&s.encode(), &mut framed);
        assert_eq!(framed.len(), 61);
        assert_eq!(Stub::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn a_format_3_entry_record_reads_as_led_by_the_single_node() {
        // Kind 2, term 1, index 9, one copy in log 5, then the effects.
        let mut body = vec![RecordKind::EntryFormat3 as u8, 1, 9, 1, 5];
        body.extend_from_slice(b"effects");
        let e = EntryRecord::decode(&body).unwrap();
        assert_eq!(
            (e.id, e.leader, e.touched, e.effects),
            (LogId::new(1, 9), SINGLE_NODE, vec![5], b"effects".to_vec())
        );
    }
}
