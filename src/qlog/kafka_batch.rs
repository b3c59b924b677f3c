//! A Kafka record batch (v2, magic 2) stored as its producer sent it: the
//! messages of one produced batch, kept in the producer's compression, so a
//! Kafka fetch serves the bytes themselves and nothing is decompressed and
//! compressed again on the way in or out.
//!
//! The qlog writes the batch with its base offset set to the first offset
//! the planner gave it and its partition leader epoch to 0 (what every
//! fetch of Queen answers); the batch's CRC-32C covers neither, so it stays
//! the producer's. A reader that needs the messages (HTTP, the time index,
//! a sealed fetch) decodes the batch, which checks that CRC.

use crate::log_id::LogId;
use bytes::Bytes;
use protocol::records::{decode_fetched, is_log_append_time, max_timestamp, set_timestamp_type, PlainRecord};

/// The fixed fields in front of a v2 batch's records.
pub const HEADER_BYTES: usize = 61;
const LENGTH_AT: usize = 8;
const LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const COUNT_AT: usize = 57;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KafkaBatch {
    /// The records it holds, as its header says.
    pub count: u32,
    /// The producer's authenticated identity (`producerSub`), kept beside
    /// the batch rather than in it.
    pub producer_sub: Option<String>,
    /// The whole batch, from its base offset to its last record.
    pub bytes: Bytes,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KafkaBatchError {
    #[error("a stored Kafka batch of {0} bytes is shorter than its header or than its length field says")]
    Short(usize),
    #[error("a stored Kafka batch has magic {0}, not 2")]
    Magic(i8),
    #[error("a stored Kafka batch holds {0} records; a batch holds at least one")]
    Count(i32),
}

/// The transactionId of an idempotent producer's record: its producer id,
/// epoch and sequence name it, so a retried batch meets its own dedup rows.
pub fn idempotent_transaction_id(producer_id: i64, producer_epoch: i16, sequence: i32) -> String {
    format!("kafka:{producer_id}:{producer_epoch}:{sequence}")
}

/// A Kafka record named by its place in its partition, as an HTTP ack may
/// name it once resolved (`http/ack_places.rs`): the offset, in text no
/// pop shows.
pub fn place_id(offset: u64) -> String {
    format!("{PLACE_PREFIX}{offset}")
}

/// The offset a place id names (`place_id`); none for any other text.
pub fn placed_offset(id: &str) -> Option<u64> {
    id.strip_prefix(PLACE_PREFIX)?.parse().ok()
}

const PLACE_PREFIX: &str = "kafka-place:";

impl KafkaBatch {
    /// A batch as it came, checked to be one: long enough, magic 2, at
    /// least one record. Its CRC and records were checked by the decode
    /// that validated the produce.
    pub fn new(bytes: Bytes, producer_sub: Option<String>) -> Result<Self, KafkaBatchError> {
        if bytes.len() < HEADER_BYTES || 12 + i32_at(&bytes, LENGTH_AT).max(0) as usize != bytes.len() {
            return Err(KafkaBatchError::Short(bytes.len()));
        }
        if bytes[MAGIC_AT] as i8 != 2 {
            return Err(KafkaBatchError::Magic(bytes[MAGIC_AT] as i8));
        }
        let count = i32_at(&bytes, COUNT_AT);
        let count = u32::try_from(count).ok().filter(|c| *c > 0).ok_or(KafkaBatchError::Count(count))?;
        Ok(Self { count, producer_sub, bytes })
    }

    /// The transactionId of the record at `index` of the batch, stored at
    /// `offset` by entry `entry`: the idempotent producer's, or one derived
    /// from where the record landed, the same on every node and replay.
    pub fn transaction_id(&self, index: u32, entry: LogId, offset: u64) -> String {
        // A derived one is unique within the entry's partition: no two of
        // its records share an offset.
        self.idempotent_transaction_id(index).unwrap_or_else(|| entry.derived_uuid(offset as u32))
    }

    /// The transactionId of the record at `index` when the producer was
    /// idempotent: only then can a batch be a duplicate of one stored before.
    pub fn idempotent_transaction_id(&self, index: u32) -> Option<String> {
        let (id, epoch, base_sequence) = self.producer()?;
        Some(idempotent_transaction_id(id, epoch, base_sequence.wrapping_add(index as i32)))
    }

    /// The transactionId of the record its producer sent just before this
    /// batch's first, under the same epoch: none for the first batch of an
    /// epoch (sequence 0) or from a producer that is not idempotent.
    pub fn preceding_transaction_id(&self) -> Option<String> {
        let (id, epoch, base_sequence) = self.producer()?;
        (base_sequence > 0).then(|| idempotent_transaction_id(id, epoch, base_sequence - 1))
    }

    /// The transactionId the first record of the producer's next epoch
    /// would have: once it is stored, this batch's epoch is fenced (KIP-360
    /// bumps an idempotent producer's epoch and restarts its sequences).
    pub fn next_epoch_transaction_id(&self) -> Option<String> {
        let (id, epoch, _) = self.producer()?;
        epoch.checked_add(1).map(|next| idempotent_transaction_id(id, next, 0))
    }

    /// An idempotent producer's id, epoch and base sequence.
    pub fn producer(&self) -> Option<(i64, i16, i32)> {
        let b = &self.bytes;
        let id = i64::from_be_bytes(b[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].try_into().expect("eight bytes"));
        let epoch = i16::from_be_bytes(b[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].try_into().expect("two bytes"));
        let base_sequence = i32_at(b, BASE_SEQUENCE_AT);
        (id >= 0 && base_sequence >= 0).then_some((id, epoch, base_sequence))
    }

    /// The batch with its topic's timestamp type (`log_append`): the
    /// producer's bytes unless the producer's type differs, then a copy with
    /// the type changed and the CRC computed again. A LogAppendTime batch
    /// gets its max timestamp, the append time, when it is written.
    pub fn typed(self, log_append: bool) -> Self {
        if is_log_append_time(&self.bytes) == log_append {
            return self;
        }
        let producers = max_timestamp(&self.bytes).filter(|_| log_append);
        let mut bytes = self.bytes.to_vec();
        set_timestamp_type(&mut bytes, producers);
        Self { bytes: bytes.into(), ..self }
    }

    /// Appends the batch as the qlog stores it: based at `base_offset`, in
    /// partition leader epoch 0; the rest, CRC included, as it came, but
    /// for a LogAppendTime batch's max timestamp, then its CRC.
    pub fn write_placed(&self, out: &mut Vec<u8>, base_offset: u64, appended_us: i64) {
        let at = out.len();
        out.extend_from_slice(&self.bytes);
        out[at..at + 8].copy_from_slice(&(base_offset as i64).to_be_bytes());
        out[at + LEADER_EPOCH_AT..at + LEADER_EPOCH_AT + 4].copy_from_slice(&0i32.to_be_bytes());
        // A LogAppendTime topic's batch (its produce set the type) carries
        // the append time, the entry's, the same on every node and replay.
        if is_log_append_time(&self.bytes) {
            set_timestamp_type(&mut out[at..], Some(appended_us.div_euclid(1000)));
        }
    }

    /// The records with their offsets, decoded (and decompressed) from a
    /// batch read back from the qlog, whose base offset is its first.
    pub fn records(&self) -> Result<Vec<(i64, PlainRecord)>, protocol::records::RecordsError> {
        decode_fetched(self.bytes.clone())
    }
}

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::records::{encode_produced, Compression, ProducedBatch};

    fn produced(producer_id: i64, compression: Compression) -> Bytes {
        let records = (0..3)
            .map(|i| PlainRecord {
                timestamp_ms: 1_700_000_000_000 + i,
                key: Some(Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(vec![b'v'; 700])),
                headers: vec![("h".into(), Some(Bytes::from_static(b"1"))), ("h".into(), None)],
            })
            .collect();
        let base_sequence = if producer_id >= 0 { 40 } else { -1 };
        let batch = ProducedBatch {
            producer_id,
            producer_epoch: 2,
            base_sequence,
            transactional: false,
            records,
            wire: Bytes::new(),
        };
        encode_produced(&batch, compression).unwrap()
    }

    #[test]
    fn a_placed_batch_reads_back_at_its_offsets_with_the_crc_it_came_with() {
        for compression in [Compression::None, Compression::Zstd, Compression::Lz4, Compression::Gzip] {
            let bytes = produced(9, compression);
            let batch = KafkaBatch::new(bytes.clone(), None).unwrap();
            assert_eq!(batch.count, 3);
            let mut out = Vec::new();
            batch.write_placed(&mut out, 1000, 0);
            assert_eq!(out[16..], bytes[16..], "everything from the magic byte on is the producer's");
            let placed = KafkaBatch::new(Bytes::from(out), None).unwrap();
            let records = placed.records().unwrap();
            assert_eq!(records.iter().map(|(o, _)| *o).collect::<Vec<_>>(), [1000, 1001, 1002]);
            assert_eq!(records[2].1.headers.len(), 2, "a repeated header key is kept");
        }
    }

    #[test]
    fn a_log_append_time_batch_is_stamped_with_its_append_time_and_a_crc_that_checks() {
        for compression in [Compression::None, Compression::Zstd] {
            let batch = KafkaBatch::new(produced(-1, compression), None).unwrap().typed(true);
            let mut out = Vec::new();
            batch.write_placed(&mut out, 7, 1_700_000_000_123_456);
            let placed = KafkaBatch::new(Bytes::from(out.clone()), None).unwrap();
            let records = placed.records().expect("the CRC was computed again");
            assert!(records.iter().all(|(_, r)| r.timestamp_ms == 1_700_000_000_123), "{records:?}");
            let mut again = Vec::new();
            placed.write_placed(&mut again, 7, 1_700_000_000_123_456);
            assert_eq!(again, out, "placing a stored batch again changes nothing");
            let back = placed.typed(false);
            let created: Vec<i64> = back.records().unwrap().iter().map(|(_, r)| r.timestamp_ms).collect();
            assert_eq!(created, [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002], "CreateTime again");
        }
    }

    #[test]
    fn transaction_ids_are_the_producers_or_derived_from_the_place() {
        let entry = LogId::new(3, 17);
        let idempotent = KafkaBatch::new(produced(9, Compression::None), None).unwrap();
        assert_eq!(idempotent.transaction_id(2, entry, 500), "kafka:9:2:42");
        let plain = KafkaBatch::new(produced(-1, Compression::None), None).unwrap();
        assert_eq!(plain.idempotent_transaction_id(0), None);
        assert_eq!(plain.transaction_id(0, entry, 500), plain.transaction_id(0, entry, 500));
        assert_ne!(plain.transaction_id(0, entry, 500), plain.transaction_id(1, entry, 501));
    }

    #[test]
    fn what_is_not_a_batch_is_refused() {
        let bytes = produced(-1, Compression::None);
        assert_eq!(KafkaBatch::new(bytes.slice(..40), None), Err(KafkaBatchError::Short(40)));
        assert!(KafkaBatch::new(bytes.slice(..bytes.len() - 1), None).is_err());
        let mut magic = bytes.to_vec();
        magic[16] = 1;
        assert_eq!(KafkaBatch::new(Bytes::from(magic), None), Err(KafkaBatchError::Magic(1)));
    }
}
