//! An encoded answer as a list of chunks: what the encoder writes goes into
//! a buffer of the answer's own, except the large record sets of a fetch
//! answer, which stay the buffers the broker made and are written to the
//! socket from there. Copying every record set into one frame, a buffer of
//! many megabytes faulted in fresh for each fetch, was a sixth of a
//! consumer's cost to the broker.

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::buf::ByteBufMut;
use std::ops::Range;

/// Record sets below this are copied: a chunk of its own costs a write's
/// slot, and small fetches (a long poll's few records) are the common case.
pub const SHARED_MIN_BYTES: usize = 16 * 1024;

pub struct Chunks<'a> {
    /// The buffers to keep rather than copy when the encoder writes them.
    shared: &'a [Bytes],
    done: Vec<Bytes>,
    /// The bytes in `done`.
    done_len: usize,
    tail: BytesMut,
}

impl<'a> Chunks<'a> {
    /// `capacity` is what the answer takes besides `shared`.
    pub fn new(shared: &'a [Bytes], capacity: usize) -> Self {
        Self {
            shared,
            done: Vec::with_capacity(2 * shared.len() + 1),
            done_len: 0,
            tail: BytesMut::with_capacity(capacity),
        }
    }

    pub fn finish(mut self) -> Vec<Bytes> {
        if !self.tail.is_empty() {
            self.done.push(self.tail.freeze());
        }
        self.done
    }

    /// Where `offset` falls in the tail: the encoder only goes back into
    /// what it wrote since the last shared buffer (a length it fills in
    /// later), never across one.
    fn in_tail(&self, offset: usize) -> usize {
        offset.checked_sub(self.done_len).expect("an encoder went back across a shared record set")
    }
}

// SAFETY: every method forwards to the tail, a `BytesMut`, except
// `put_slice`, which either forwards too or appends a shared buffer as a
// whole chunk; the tail's own invariants hold throughout.
unsafe impl BufMut for Chunks<'_> {
    fn remaining_mut(&self) -> usize {
        self.tail.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialised `cnt` bytes of the tail's `chunk_mut`.
        unsafe { self.tail.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.tail.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        let shared = self.shared.iter().find(|b| b.as_ptr() == src.as_ptr() && b.len() == src.len());
        match shared {
            Some(b) if !src.is_empty() => {
                if !self.tail.is_empty() {
                    let written = self.tail.split().freeze();
                    self.done_len += written.len();
                    self.done.push(written);
                }
                self.done_len += b.len();
                self.done.push(b.clone());
            }
            _ => self.tail.put_slice(src),
        }
    }
}

impl ByteBufMut for Chunks<'_> {
    fn offset(&self) -> usize {
        self.done_len + self.tail.len()
    }

    fn seek(&mut self, offset: usize) {
        let at = self.in_tail(offset);
        self.tail.resize(at, 0);
    }

    fn range(&mut self, r: Range<usize>) -> &mut [u8] {
        let (start, end) = (self.in_tail(r.start), self.in_tail(r.end));
        &mut self.tail[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_buffer_is_a_chunk_of_its_own_and_the_rest_is_copied() {
        let big = Bytes::from(vec![7u8; 100]);
        let shared = [big.clone()];
        let mut c = Chunks::new(&shared, 16);
        c.put_i32(1);
        c.put_slice(&big);
        c.put_slice(&big[..10]);
        c.put_u8(9);
        assert_eq!(c.offset(), 4 + 100 + 10 + 1);
        let chunks = c.finish();
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[1].as_ptr(), big.as_ptr(), "the shared buffer itself, not a copy");
        let joined: Vec<u8> = chunks.concat();
        let mut want = vec![0, 0, 0, 1];
        want.extend_from_slice(&[7; 110]);
        want.push(9);
        assert_eq!(joined, want);
    }

    #[test]
    fn a_length_filled_in_after_the_last_shared_buffer_lands_in_place() {
        let big = Bytes::from(vec![1u8; 50]);
        let shared = [big.clone()];
        let mut c = Chunks::new(&shared, 16);
        c.put_slice(&big);
        let gap = c.put_gap(4);
        c.put_u8(2);
        c.gap_buf(gap).copy_from_slice(&[9, 9, 9, 9]);
        let joined: Vec<u8> = c.finish().concat();
        assert_eq!(&joined[50..], &[9, 9, 9, 9, 2]);
    }
}
