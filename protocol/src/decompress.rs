//! Decompressing a produced batch with a ceiling on its output. A few bytes
//! of gzip, lz4 or zstd can expand to gigabytes; a client must not be able
//! to make the broker allocate without bound, so each codec stops at the
//! limit and the batch is refused.

use anyhow::{bail, Context};
use bytes::{Buf, Bytes};
use kafka_protocol::compression::{Decompressor, Snappy};
use kafka_protocol::records::Compression;
use std::io::Read;

/// Kafka's snappy framing (xerial): this header, then [u32 length][raw block]...
const XERIAL_HEADER: &[u8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER_LEN: usize = 16;

/// The decompressor `RecordBatchDecoder` calls for each compressed batch.
pub fn bounded(limit: usize) -> impl Fn(&mut Bytes, Compression) -> anyhow::Result<Bytes> {
    move |input, compression| {
        let data = input.copy_to_bytes(input.remaining());
        let out = match compression {
            Compression::None => return Ok(data),
            Compression::Gzip => read_capped(flate2::read::GzDecoder::new(&data[..]), limit)?,
            Compression::Lz4 => read_capped(lz4::Decoder::new(&data[..]).context("lz4 frame header")?, limit)?,
            Compression::Zstd => read_capped(zstd::stream::read::Decoder::new(&data[..])?, limit)?,
            Compression::Snappy => {
                // Snappy declares every block's size up front: check the
                // total, then let the codec's own reader do the work.
                let declared = snappy_declared_len(&data)?;
                if declared > limit {
                    bail!("the batch declares {declared} bytes uncompressed, over the limit of {limit}");
                }
                let mut data = data;
                return <Snappy as Decompressor<Bytes>>::decompress(&mut data, |b: &mut Bytes| Ok(b.clone()));
            }
        };
        Ok(Bytes::from(out))
    }
}

fn read_capped(reader: impl Read, limit: usize) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut out).context("the batch does not decompress")?;
    if out.len() > limit {
        bail!("the batch decompresses past the limit of {limit} bytes");
    }
    Ok(out)
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
        let err = bounded(1 << 20)(&mut Bytes::from(bomb.clone()), Compression::Zstd).unwrap_err();
        assert!(err.to_string().contains("past the limit"), "{err}");
        assert_eq!(bounded(16 << 20)(&mut Bytes::from(bomb), Compression::Zstd).unwrap().len(), 10 << 20);
    }

    #[test]
    fn a_snappy_block_declaring_too_much_is_refused_before_decoding() {
        let raw = snap::raw::Encoder::new().compress_vec(&vec![7u8; 100_000]).unwrap();
        let err = bounded(1000)(&mut Bytes::from(raw), Compression::Snappy).unwrap_err();
        assert!(err.to_string().contains("over the limit"), "{err}");
    }
}
