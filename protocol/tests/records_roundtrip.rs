//! Property tests: whatever a producer batches, in any compression, decodes
//! to the records it sent; and what a fetch encodes decodes back with its
//! offsets.

use bytes::Bytes;
use proptest::prelude::*;
use protocol::records::{
    decode_fetched, decode_produced, encode_fetched, encode_produced, Compression, PlainRecord, ProducedBatch,
};

fn record() -> impl Strategy<Value = PlainRecord> {
    (
        0i64..4_000_000_000_000,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..2048)),
        proptest::collection::vec(
            // Two letters of three: keys repeat, which Kafka keeps (a list).
            ("[a-c]{1,2}", proptest::option::of(proptest::collection::vec(any::<u8>(), 0..16))),
            0..6,
        ),
    )
        .prop_map(|(timestamp_ms, key, value, headers)| PlainRecord {
            timestamp_ms,
            key: key.map(Bytes::from),
            value: value.map(Bytes::from),
            headers: headers.into_iter().map(|(k, v)| (k, v.map(Bytes::from))).collect(),
        })
}

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn produced_batches_decode_to_what_was_sent(
        records in proptest::collection::vec(record(), 1..20),
        compression in compression(),
        producer_id in -1i64..1000,
        base_sequence in 0i32..1_000_000,
    ) {
        let batch = ProducedBatch { producer_id, producer_epoch: 0, base_sequence, transactional: false, records, wire: Bytes::new() };
        let bytes = encode_produced(&batch, compression).unwrap();
        let decoded = decode_produced(bytes.clone(), &protocol::decompress::Allowance::new(1 << 24)).unwrap();
        prop_assert_eq!(decoded, vec![ProducedBatch { wire: bytes, ..batch }]);
    }

    #[test]
    fn fetched_records_keep_their_offsets(records in proptest::collection::vec(record(), 1..20), first in 0i64..1_000_000) {
        let with_offsets: Vec<(i64, PlainRecord)> =
            records.iter().cloned().enumerate().map(|(i, r)| (first + i as i64, r)).collect();
        let bytes = encode_fetched(&with_offsets, usize::MAX).unwrap();
        let mut buf = bytes.clone();
        let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut buf).unwrap();
        prop_assert_eq!(sets.len(), 1, "one batch for one run of offsets");
        let got: Vec<i64> = sets[0].records.iter().map(|r| r.offset).collect();
        let want: Vec<i64> = with_offsets.iter().map(|(o, _)| *o).collect();
        prop_assert_eq!(got, want);
    }

    /// A fetch answer holds as many records as fit, and the first when none
    /// does; with timestamps in order the sizing is exact, so one more record
    /// would not have fit.
    #[test]
    fn fetched_records_fit_the_limit(
        records in proptest::collection::vec(record(), 1..20),
        first in 0i64..1_000_000,
        max_bytes in 0usize..20_000,
        in_order in any::<bool>(),
    ) {
        let mut records = records;
        if in_order {
            records.sort_by_key(|r| r.timestamp_ms);
        }
        let with_offsets: Vec<(i64, PlainRecord)> =
            records.iter().cloned().enumerate().map(|(i, r)| (first + i as i64, r)).collect();
        let bytes = encode_fetched(&with_offsets, max_bytes).unwrap();
        let taken = decode_fetched(bytes.clone()).unwrap().len();
        prop_assert!(taken >= 1);
        prop_assert!(bytes.len() <= max_bytes || taken == 1, "{} bytes for {} records over {}", bytes.len(), taken, max_bytes);
        if in_order && taken < with_offsets.len() {
            let one_more = encode_fetched(&with_offsets[..taken + 1], usize::MAX).unwrap();
            prop_assert!(one_more.len() > max_bytes, "record {} would have fit: {} bytes", taken, one_more.len());
        }
    }
}

/// A batch of `n` records of `value_len` bytes (record `i` all `i`), from a
/// producer without idempotence, uncompressed.
fn plain_batch(n: usize, value_len: usize) -> Bytes {
    let records = (0..n)
        .map(|i| PlainRecord {
            timestamp_ms: 0,
            key: None,
            value: Some(Bytes::from(vec![i as u8; value_len])),
            headers: vec![],
        })
        .collect();
    let batch = ProducedBatch {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        transactional: false,
        wire: Bytes::new(),
        records,
    };
    encode_produced(&batch, Compression::None).unwrap()
}

/// The size Kafka holds against `max.message.bytes` is each batch's as it
/// travels; a set whose batch claims more bytes than it has counts nothing
/// (its decode refuses it).
#[test]
fn the_largest_batch_of_a_set_is_measured_off_its_headers() {
    let (small, large) = (plain_batch(1, 100), plain_batch(5, 100));
    let set: Vec<u8> = [&small[..], &large[..], &small[..]].concat();
    assert_eq!(protocol::records::largest_batch_bytes(&set), large.len());
    assert_eq!(protocol::records::largest_batch_bytes(&large[..large.len() - 1]), 0, "a batch cut short");
    assert_eq!(protocol::records::largest_batch_bytes(b"not a record batch at all, only bytes"), 0);
}

/// A batch whose header's last offset delta disagrees with its records is
/// refused, CRC and all intact: it is served as it came, and a consumer
/// takes its next offset from that field.
#[test]
fn a_batch_whose_last_offset_delta_disagrees_with_its_records_is_refused() {
    let good = plain_batch(3, 10);
    let allowance = protocol::decompress::Allowance::new(1 << 20);
    assert_eq!(decode_produced(good.clone(), &allowance).unwrap()[0].records.len(), 3);
    let mut bad = good.to_vec();
    bad[23..27].copy_from_slice(&5i32.to_be_bytes());
    let crc = crc32c::crc32c(&bad[21..]);
    bad[17..21].copy_from_slice(&crc.to_be_bytes());
    let refused = decode_produced(Bytes::from(bad), &allowance).unwrap_err();
    assert!(refused.to_string().contains("last offset delta 5"), "{refused}");
}
