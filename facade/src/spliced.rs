//! A fetch answer whose record sets are partly ranges of stored files.
//!
//! The answer is encoded as any other, by the protocol crate, with a
//! stand-in of the right length for each such record set: a slice of one
//! static region of zeros that nothing ever reads or writes, so the stand-in
//! costs neither a page nor a copy. The encoder keeps record sets of
//! `SHARED_MIN_BYTES` or more as chunks of their own (`protocol::chunks`);
//! before the answer is written each stand-in's chunk is replaced by what
//! it stands for, so the stored bytes go from their files to the socket.

use crate::file_range::FileRange;
use bytes::Bytes;
use protocol::chunks::SHARED_MIN_BYTES;

/// A piece of an answer on its way out.
#[derive(Debug, Clone)]
pub enum Part {
    Bytes(Bytes),
    File(FileRange),
}

impl Part {
    pub fn len(&self) -> usize {
        match self {
            Part::Bytes(b) => b.len(),
            Part::File(r) => r.len,
        }
    }
}

/// A record set's stand-in and the parts it stands for.
#[derive(Debug)]
pub struct Splice {
    stand_in: Bytes,
    parts: Vec<Part>,
}

/// The room stand-ins are cut from. A record set is at most a partition's
/// share of one fetch; one larger than this is read into memory instead.
const STAND_IN_SPACE: usize = 64 << 20;
static ZEROS: [u8; STAND_IN_SPACE] = [0; STAND_IN_SPACE];

/// Stand-ins for the record sets of one answer: each begins one byte after
/// the one before, so no two of one answer are the same slice.
#[derive(Default)]
pub struct StandIns {
    next: usize,
}

impl StandIns {
    /// A splice of `parts` and the stand-in to encode in their place; none
    /// when they are too few bytes to be worth a chunk of their own, or too
    /// many for the stand-in room: the caller reads them into memory.
    pub fn splice(&mut self, parts: Vec<Part>) -> Result<(Bytes, Splice), Vec<Part>> {
        let len: usize = parts.iter().map(Part::len).sum();
        if len < SHARED_MIN_BYTES || self.next + len > STAND_IN_SPACE {
            return Err(parts);
        }
        let stand_in = Bytes::from_static(&ZEROS[self.next..self.next + len]);
        self.next += 1;
        Ok((stand_in.clone(), Splice { stand_in, parts }))
    }
}

/// The chunks of an encoded answer with each stand-in replaced by its parts,
/// or an error naming a stand-in the encoding lost (its zeros must never
/// reach a consumer as records).
pub fn splice(chunks: Vec<Bytes>, splices: Vec<Splice>) -> Result<Vec<Part>, String> {
    let mut out = Vec::with_capacity(chunks.len() + splices.iter().map(|s| s.parts.len()).sum::<usize>());
    let mut waiting = splices.into_iter().peekable();
    for chunk in chunks {
        match waiting.peek() {
            Some(s) if s.stand_in.as_ptr() == chunk.as_ptr() && s.stand_in.len() == chunk.len() => {
                out.extend(waiting.next().expect("peeked").parts);
            }
            _ => out.push(Part::Bytes(chunk)),
        }
    }
    match waiting.next() {
        Some(lost) => {
            Err(format!("a record set of {} bytes is not a chunk of the encoded answer", lost.stand_in.len()))
        }
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_is_replaced_by_its_parts_and_a_lost_one_is_an_error() {
        let mut stand_ins = StandIns::default();
        let parts = vec![Part::Bytes(Bytes::from(vec![1; SHARED_MIN_BYTES])), Part::Bytes(Bytes::from_static(b"xy"))];
        let (a, splice_a) = stand_ins.splice(parts).unwrap();
        let (b, splice_b) = stand_ins.splice(vec![Part::Bytes(Bytes::from(vec![2; SHARED_MIN_BYTES]))]).unwrap();
        assert_ne!(a.as_ptr(), b.as_ptr(), "two stand-ins of one answer differ");
        let head = Bytes::from_static(b"head");
        let out = splice(vec![head.clone(), a, head.clone(), b], vec![splice_a, splice_b]).unwrap();
        assert_eq!(out.iter().map(Part::len).collect::<Vec<_>>(), [4, SHARED_MIN_BYTES, 2, 4, SHARED_MIN_BYTES]);

        let (_, lost) = stand_ins.splice(vec![Part::Bytes(Bytes::from(vec![3; SHARED_MIN_BYTES]))]).unwrap();
        assert!(splice(vec![head], vec![lost]).is_err(), "a stand-in the encoding lost is never sent");
    }

    #[test]
    fn a_small_record_set_is_left_to_be_read() {
        let small = vec![Part::Bytes(Bytes::from_static(b"tiny"))];
        assert!(StandIns::default().splice(small).is_err());
    }
}
