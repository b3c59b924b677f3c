//! Transaction markers: the control batch a transaction's end writes into
//! every partition it touched, and what a batch's header says about the
//! transaction it belongs to. A marker is one control record: its key the
//! version (0) and type (0 abort, 1 commit), its value the version (0) and
//! the coordinator epoch, in a batch whose attributes carry the
//! transactional and control bits and whose header names the producer.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

const ATTRIBUTES_AT: usize = 21;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const HEADER_BYTES: usize = 61;
const TRANSACTIONAL: u16 = 1 << 4;
const CONTROL: u16 = 1 << 5;
const ABORT: i16 = 0;
const COMMIT: i16 = 1;

/// What a v2 batch's header says about its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchTxn {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Part of a transaction: a consumer reading committed data waits for
    /// its marker.
    pub transactional: bool,
    /// A marker, not data.
    pub control: bool,
}

/// The header fields of the batch `batch` begins with; none when it is
/// shorter than a header.
pub fn batch_txn(batch: &[u8]) -> Option<BatchTxn> {
    let header = batch.get(..HEADER_BYTES)?;
    let attributes = u16::from_be_bytes(header[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].try_into().ok()?);
    Some(BatchTxn {
        producer_id: i64::from_be_bytes(header[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].try_into().ok()?),
        producer_epoch: i16::from_be_bytes(header[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].try_into().ok()?),
        transactional: attributes & TRANSACTIONAL != 0,
        control: attributes & CONTROL != 0,
    })
}

/// The marker batch ending producer `producer_id`'s transaction at epoch
/// `producer_epoch`, committed or aborted, stamped `timestamp_ms`; its base
/// offset (0 here) is set where it is placed.
pub fn marker_batch(producer_id: i64, producer_epoch: i16, commit: bool, timestamp_ms: i64) -> Bytes {
    let kind = if commit { COMMIT } else { ABORT };
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&0i16.to_be_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    // The coordinator epoch: Queen's coordinator is the raft leader, whose
    // term fences an old one; consumers do not read it.
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&0i16.to_be_bytes());
    value.extend_from_slice(&0i32.to_be_bytes());
    let record = Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: timestamp_ms,
        key: Some(Bytes::from(key)),
        value: Some(Bytes::from(value)),
        headers: Default::default(),
    };
    let mut buf = BytesMut::with_capacity(HEADER_BYTES + 32);
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, std::slice::from_ref(&record), &options).expect("a marker batch encodes");
    buf.freeze()
}

/// Whether a control record's key marks a commit (true) or an abort
/// (false); none for a key that is not a marker's.
pub fn marker_commits(key: &[u8]) -> Option<bool> {
    match key.get(..4)? {
        [0, 0, 0, 0] => Some(false),
        [0, 0, 0, 1] => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::RecordBatchDecoder;

    #[test]
    fn a_marker_is_one_control_record_of_its_producer() {
        for commit in [true, false] {
            let batch = marker_batch(42, 7, commit, 1_700_000_000_000);
            let txn = batch_txn(&batch).unwrap();
            assert_eq!(txn, BatchTxn { producer_id: 42, producer_epoch: 7, transactional: true, control: true });
            let mut bytes = batch.clone();
            let records = RecordBatchDecoder::decode(&mut bytes).unwrap().records;
            assert_eq!(records.len(), 1);
            assert!(records[0].control && records[0].transactional);
            assert_eq!(records[0].sequence, -1);
            assert_eq!(marker_commits(records[0].key.as_deref().unwrap()), Some(commit));
        }
    }

    #[test]
    fn a_short_batch_has_no_header_to_read() {
        assert_eq!(batch_txn(&[0u8; 60]), None);
        assert_eq!(marker_commits(&[0, 0]), None);
    }
}
