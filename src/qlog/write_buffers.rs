//! The buffers group commits are staged in, used again. A busy log stages
//! megabytes per commit, and a buffer allocated fresh for each commit had its
//! pages faulted in and zeroed by the kernel every time: a quarter of the
//! samples of a 16-partition Kafka produce (`docs/benchmarks.md`). A buffer
//! comes back when its write is done (`LogWrite`'s drop) and the next
//! commit's staging takes it, its capacity kept.
//!
//! One pool for the process: it holds only spare capacity, so nodes sharing
//! it (the simulators run several in one process) cannot see each other.

use std::sync::Mutex;

/// Spare buffers kept at most, and the largest capacity kept: a commit of a
/// rare giant push does not pin its memory.
const KEPT: usize = 8;
const LARGEST: usize = 64 << 20;

static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer for at least `capacity` bytes, a spare one when there is.
pub fn take(capacity: usize) -> Vec<u8> {
    let spare = SPARE.lock().expect("write buffer pool").pop();
    match spare {
        Some(mut buf) => {
            buf.reserve(capacity);
            buf
        }
        None => Vec::with_capacity(capacity),
    }
}

/// Keeps `buf` for a later commit, emptied, unless the pool is full or it
/// is too large to keep.
pub fn give(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > LARGEST {
        return;
    }
    buf.clear();
    let mut spare = SPARE.lock().expect("write buffer pool");
    if spare.len() < KEPT {
        spare.push(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty_with_its_capacity() {
        let mut buf = take(1 << 20);
        buf.extend_from_slice(&[7; 1000]);
        let at = buf.as_ptr();
        give(buf);
        // Other tests share the pool: the buffer is one of those it holds.
        let mut seen = false;
        let mut taken = Vec::new();
        for _ in 0..KEPT {
            let b = take(16);
            assert!(b.is_empty(), "a spare buffer comes back empty");
            seen |= b.as_ptr() == at;
            taken.push(b);
        }
        assert!(seen, "the buffer given back was used again");
        taken.into_iter().for_each(give);
        give(Vec::with_capacity(LARGEST + 1));
        assert!(SPARE.lock().unwrap().iter().all(|b| b.capacity() <= LARGEST), "a giant buffer is let go");
    }
}
