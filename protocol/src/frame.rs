//! Framing: every Kafka request and response is a 4-byte big-endian size
//! followed by that many bytes.

use bytes::{Buf, Bytes, BytesMut};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("a request of {size} bytes is over the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("a request declares a negative size ({0})")]
    NegativeSize(i32),
}

/// Takes one whole frame (without its size prefix) off the front of `buf`,
/// or answers `None` when the frame has not fully arrived yet. A frame over
/// `limit` is refused as soon as its size is known, before it is buffered.
pub fn split_frame(buf: &mut BytesMut, limit: usize) -> Result<Option<Bytes>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let declared = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let size = usize::try_from(declared).map_err(|_| FrameError::NegativeSize(declared))?;
    if size > limit {
        return Err(FrameError::TooLarge { size, limit });
    }
    if buf.len() < 4 + size {
        buf.reserve(4 + size - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(size).freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_the_whole_frame_then_cuts_exactly_it() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 3, 1, 2][..]);
        assert_eq!(split_frame(&mut buf, 100), Ok(None));
        buf.extend_from_slice(&[3, 0, 0]);
        assert_eq!(split_frame(&mut buf, 100), Ok(Some(Bytes::from_static(&[1, 2, 3]))));
        assert_eq!(&buf[..], &[0, 0]);
    }

    #[test]
    fn refuses_oversized_and_negative_sizes_before_buffering() {
        let mut buf = BytesMut::from(&[0u8, 0, 1, 0][..]);
        assert_eq!(split_frame(&mut buf, 255), Err(FrameError::TooLarge { size: 256, limit: 255 }));
        let mut buf = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff][..]);
        assert_eq!(split_frame(&mut buf, 255), Err(FrameError::NegativeSize(-1)));
    }
}
