//! Kafka records ⇄ Queen messages. A produced record is stored as sent
//! (key, value, headers, CreateTime); an HTTP-pushed message reads as a
//! record whose value is the payload's JSON text, with Queen's ids in
//! headers and the append time as its timestamp.

use crate::message_view::MessageView;
use crate::reader::StoredMessage;
use protocol::records::{PlainRecord, ProducedBatch};

pub const TRANSACTION_ID_HEADER: &str = "queen-transaction-id";
pub const TRACE_ID_HEADER: &str = "queen-trace-id";

/// The transactionId a produced record is stored under. An idempotent
/// producer's (id, epoch, sequence) names the record, so a retried batch
/// meets its own dedup rows; other records get a fresh id.
pub fn transaction_id(batch: &ProducedBatch, index: usize) -> String {
    if batch.producer_id >= 0 && batch.base_sequence >= 0 {
        let sequence = batch.base_sequence.wrapping_add(index as i32);
        format!("kafka:{}:{}:{}", batch.producer_id, batch.producer_epoch, sequence)
    } else {
        uuid::Uuid::new_v4().to_string()
    }
}

/// A stored message's timestamp as a fetch answers it: the producer's
/// CreateTime, or for an HTTP push, which has none, the time Queen stored it.
pub fn timestamp_ms(stored: &StoredMessage<MessageView>) -> i64 {
    stored.message.timestamp_ms.unwrap_or(stored.timestamp_us / 1000)
}

/// The record a fetch answers; its bytes are the view's, not copies.
pub fn to_record(stored: StoredMessage<MessageView>) -> (i64, PlainRecord) {
    let timestamp_ms = timestamp_ms(&stored);
    let m = stored.message;
    let mut headers = m.headers;
    if m.timestamp_ms.is_none() {
        headers.push((TRANSACTION_ID_HEADER.to_string(), Some(m.transaction_id)));
        if let Some(trace) = m.trace_id {
            headers.push((TRACE_ID_HEADER.to_string(), Some(trace)));
        }
    }
    (stored.offset as i64, PlainRecord { timestamp_ms, key: m.key, value: m.value, headers })
}
