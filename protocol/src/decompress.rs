//! Decompressing a produced batch with a ceiling on its output. A few bytes
//! of gzip, lz4 or zstd can expand to gigabytes; a client must not be able
//! to make the broker allocate without bound, so each codec stops at the
//! limit and the batch is refused. The limit is one [`Allowance`] for all
//! the batches of a request, which is what the broker reserves for it from
//! the budget all requests in flight share.

use anyhow::{bail, Context};
use bytes::{Buf, Bytes};
use kafka_protocol::compression::{Decompressor, Snappy};
use kafka_protocol::records::Compression;
use std::cell::Cell;
use std::io::Read;

/// Kafka's snappy framing (xerial): this header, then [u32 length][raw block]...
const XERIAL_HEADER: &[u8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER_LEN: usize = 16;

/// The bytes the compressed batches of one request may decompress to, all
/// of them together.
#[derive(Debug)]
pub struct Allowance {
    limit: usize,
    used: Cell<usize>,
}

impl Allowance {
    pub fn new(limit: usize) -> Self {
        Self { limit, used: Cell::new(0) }
    }

    /// The bytes decompressed so far.
    pub fn used(&self) -> usize {
        self.used.get()
    }

    fn left(&self) -> usize {
        self.limit - self.used.get()
    }

    fn spend(&self, n: usize) {
        self.used.set(self.used.get() + n);
    }
}

/// The decompressor `RecordBatchDecoder` calls for each compressed batch;
/// every batch it decompresses spends from `allowance`.
pub fn bounded(allowance: &Allowance) -> impl Fn(&mut Bytes, Compression) -> anyhow::Result<Bytes> + '_ {
    move |input, compression| {
        let data = input.copy_to_bytes(input.remaining());
        let limit = allowance.limit;
        let out = match compression {
            Compression::None => return Ok(data),
            Compression::Gzip => read_capped(flate2::read::GzDecoder::new(&data[..]), allowance)?,
            Compression::Lz4 => read_capped(lz4::Decoder::new(&data[..]).context("lz4 frame header")?, allowance)?,
            Compression::Zstd => read_capped(zstd::stream::read::Decoder::new(&data[..])?, allowance)?,
            Compression::Snappy => {
                // Snappy declares every block's size up front: check the
                // total, then let the codec's own reader do the work.
                let declared = snappy_declared_len(&data)?;
                if declared > allowance.left() {
                    bail!("the batches declare more than the limit of {limit} bytes uncompressed");
                }
                allowance.spend(declared);
                let mut data = data;
                return <Snappy as Decompressor<Bytes>>::decompress(&mut data, |b: &mut Bytes| Ok(b.clone()));
            }
        };
        Ok(Bytes::from(out))
    }
}

fn read_capped(reader: impl Read, allowance: &Allowance) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    let left = allowance.left();
    reader.take(left as u64 + 1).read_to_end(&mut out).context("the batch does not decompress")?;
    if out.len() > left {
        bail!("the batches decompress past the limit of {} bytes", allowance.limit);
    }
    allowance.spend(out.len());
    Ok(out)
}

/// Whether any batch of a produced record set is compressed, read from the
/// batch headers without decoding; a set too short to tell counts as
/// compressed (decoding it will refuse it).
pub fn any_compressed(mut set: &[u8]) -> bool {
    // Every magic frames a batch as [i64 offset][i32 length][length bytes];
    // the magic byte is at 16 and the codec in the attributes' low 3 bits,
    // at 22 (the low byte of an i16) from magic 2 and at 17 before.
    while !set.is_empty() {
        let Some(len) = set.get(8..12) else { return true };
        let end = 12 + i32::from_be_bytes([len[0], len[1], len[2], len[3]]).max(0) as usize;
        let attributes = match set.get(16) {
            Some(magic) if *magic >= 2 => set.get(22),
            Some(_) => set.get(17),
            None => None,
        };
        match attributes {
            Some(a) if a & 0x07 == 0 => {}
            _ => return true,
        }
        set = set.get(end..).unwrap_or_default();
    }
    false
}

fn snappy_declared_len(data: &[u8]) -> anyhow::Result<usize> {
    if !data.starts_with(XERIAL_HEADER) {
        return Ok(snap::raw::decompress_len(data)?);
    }
    let mut rest = data.get(XERIAL_HEADER_LEN..).context("a truncated snappy header")?;
    let mut total = 0usize;
    while !rest.is_empty() {
        let len = rest.get(..4).context("a truncated snappy block length")?;
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let block = rest.get(4..4 + len).context("a truncated snappy block")?;
        total = total.saturating_add(snap::raw::decompress_len(block)?);
        rest = &rest[4 + len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zstd_bomb_stops_at_the_limit() {
        let bomb = zstd::encode_all(&vec![0u8; 10 << 20][..], 3).unwrap();
        assert!(bomb.len() < 4096);
        let err = bounded(&Allowance::new(1 << 20))(&mut Bytes::from(bomb.clone()), Compression::Zstd).unwrap_err();
        assert!(err.to_string().contains("past the limit"), "{err}");
        let allowance = Allowance::new(16 << 20);
        assert_eq!(bounded(&allowance)(&mut Bytes::from(bomb), Compression::Zstd).unwrap().len(), 10 << 20);
        assert_eq!(allowance.used(), 10 << 20);
    }

    #[test]
    fn the_allowance_is_for_all_batches_together() {
        let batch = zstd::encode_all(&vec![0u8; 600_000][..], 3).unwrap();
        let allowance = Allowance::new(1_000_000);
        let decompress = bounded(&allowance);
        decompress(&mut Bytes::from(batch.clone()), Compression::Zstd).unwrap();
        let err = decompress(&mut Bytes::from(batch), Compression::Zstd).unwrap_err();
        assert!(err.to_string().contains("past the limit of 1000000"), "{err}");
    }

    #[test]
    fn a_snappy_block_declaring_too_much_is_refused_before_decoding() {
        let raw = snap::raw::Encoder::new().compress_vec(&vec![7u8; 100_000]).unwrap();
        let err = bounded(&Allowance::new(1000))(&mut Bytes::from(raw), Compression::Snappy).unwrap_err();
        assert!(err.to_string().contains("more than the limit"), "{err}");
    }

    #[test]
    fn compression_is_read_from_each_batch_header() {
        let header = |magic: u8, codec: u8| {
            let mut b = vec![0u8; 30];
            b[8..12].copy_from_slice(&18i32.to_be_bytes());
            b[16] = magic;
            b[if magic >= 2 { 22 } else { 17 }] = codec;
            b
        };
        assert!(!any_compressed(&[header(2, 0), header(2, 0)].concat()));
        assert!(any_compressed(&[header(2, 0), header(2, 4)].concat()));
        assert!(any_compressed(&header(1, 1)));
        assert!(any_compressed(&[0u8; 5]));
        assert!(!any_compressed(&[]));
    }
}
