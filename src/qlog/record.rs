//! The frame every qlog record shares: `[length u32][xxh3 u64][body]`.
//!
//! The length counts every byte after itself (checksum and body) and the
//! checksum covers every byte after itself (the body), so a file describes
//! itself: a scanner always knows where the next record starts, and a record
//! torn by a crash fails its checksum.

use xxhash_rust::xxh3::xxh3_64;

/// Bytes of the length and checksum in front of every body.
pub const FRAME_HEADER: usize = 12;

/// The first byte of every body names what the record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// One append: the messages of one push for one partition.
    Message = 1,
    /// A whole, payload-free entry record as format 3 wrote it, with no
    /// leader id: read, never written.
    EntryFormat3 = 2,
    /// The 61-byte stub that names the entry record in every other touched log.
    Stub = 3,
    /// A whole, payload-free entry record, in the lowest log the entry
    /// touches, naming its leader (format 4).
    Entry = 4,
}

impl RecordKind {
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Message),
            2 => Some(Self::EntryFormat3),
            3 => Some(Self::Stub),
            4 => Some(Self::Entry),
            _ => None,
        }
    }
}

/// Appends `body` to `out` inside its frame.
#[cfg(test)]
pub fn frame_into(body: &[u8], out: &mut Vec<u8>) {
    frame_with(out, |o| o.extend_from_slice(body));
}

/// Appends a frame whose body `write_body` appends to `out` directly, so a
/// large body is not built apart and copied in.
pub fn frame_with(out: &mut Vec<u8>, write_body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    write_body(out);
    let body = &out[start + FRAME_HEADER..];
    let len = u32::try_from(body.len() + 8).expect("a qlog record body fits in u32");
    let sum = xxh3_64(body);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + FRAME_HEADER].copy_from_slice(&sum.to_le_bytes());
}

/// What a scanner found at one position of a file.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A record whose checksum verifies; `next` is where the following one starts.
    Valid { body: &'a [u8], next: usize },
    /// A record whose length fits the file but whose checksum fails; `next`
    /// is where the following record would start if the length is right.
    Damaged { next: usize },
    /// Bytes that cannot start a record: a length of zero (unwritten space),
    /// too small for a body, or running past the end of the file.
    Torn,
    /// The end of the file, exactly on a record boundary.
    End,
}

/// Reads the frame at `pos` of `buf`.
pub fn read_frame(buf: &[u8], pos: usize) -> Frame<'_> {
    if pos == buf.len() {
        return Frame::End;
    }
    if buf.len() - pos < FRAME_HEADER {
        return Frame::Torn;
    }
    let len = u32::from_le_bytes(buf[pos..pos + 4].try_into().unwrap()) as usize;
    // A body has at least its kind byte.
    if len < 9 || len > buf.len() - pos - 4 {
        return Frame::Torn;
    }
    let sum = u64::from_le_bytes(buf[pos + 4..pos + 12].try_into().unwrap());
    let body = &buf[pos + FRAME_HEADER..pos + 4 + len];
    let next = pos + 4 + len;
    if xxh3_64(body) == sum {
        Frame::Valid { body, next }
    } else {
        Frame::Damaged { next }
    }
}

/// Appends `v` as an unsigned LEB128 varint: ids, offsets and lengths are
/// small, and a record header of fixed u64s was a third of a small message.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    leb128::write::unsigned(out, v).expect("writing to a Vec cannot fail");
}

/// Little-endian field reader over a record body; every getter fails with
/// `None` instead of panicking on a short body.
#[derive(Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4).map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Option<u64> {
        self.bytes(8).map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    }
    pub fn i64(&mut self) -> Option<i64> {
        self.bytes(8).map(|b| i64::from_le_bytes(b.try_into().unwrap()))
    }
    /// An unsigned LEB128 varint (`put_varint`).
    pub fn varint(&mut self) -> Option<u64> {
        let mut rest = self.buf.get(self.pos..)?;
        let before = rest.len();
        let v = leb128::read::unsigned(&mut rest).ok()?;
        self.pos += before - rest.len();
        Some(v)
    }
    pub fn array16(&mut self) -> Option<[u8; 16]> {
        self.bytes(16).map(|b| b.try_into().unwrap())
    }
    /// How many bytes the getters have taken.
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_body_reads_back_and_a_flipped_bit_is_damage() {
        let mut buf = Vec::new();
        frame_into(b"\x01hello", &mut buf);
        frame_into(b"\x02world", &mut buf);
        let Frame::Valid { body, next } = read_frame(&buf, 0) else { panic!("first record should verify") };
        assert_eq!(body, b"\x01hello");
        assert!(matches!(read_frame(&buf, next), Frame::Valid { .. }));
        buf[14] ^= 1;
        assert_eq!(read_frame(&buf, 0), Frame::Damaged { next });
    }

    #[test]
    fn zeroes_and_short_tails_are_torn() {
        assert_eq!(read_frame(&[0u8; 32], 0), Frame::Torn);
        let mut buf = Vec::new();
        frame_into(b"\x01abc", &mut buf);
        assert_eq!(read_frame(&buf[..buf.len() - 1], 0), Frame::Torn);
        assert_eq!(read_frame(&buf, buf.len()), Frame::End);
    }
}
