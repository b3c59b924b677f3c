//! The framed pop answer (`frames=true`, `Content-Type:
//! application/x-queen-pop`), which the queen-mq client asks for with
//! `framed_pop` and unpacks itself:
//!
//! ```text
//! "QPF1" | u8 1 | u32 len, the answer's own keys as one JSON object
//! u16 len, queue | u16 len, leaseId | u16 len, consumerGroup | u32 claims
//! per claim:  u64 partitionId | u16 len, partition | u64 start | u64 end | u32 deliveryAttempt | u32 records
//! per record: u64 base_offset | i64 created_at_us | u32 count | u8 codec (0 raw) | u32 len | frames
//! frame:      u32 body_len | u8 flags | u8[16] message id | [u8[16] trace id, flag 1] | u16 len, transactionId
//!             | [u16 len, producerSub, flag 2] | payload
//! ```
//!
//! All integers little-endian. Each delivered message is one record of one
//! frame, so a claim's messages need not be contiguous. The partition id is
//! a number here: the queue id in the high 32 bits and the partition id in
//! the low 32 (`packed_partition_id`), which acks may name as well as the
//! JSON answer's id. What the format cannot carry (a trace id that is not a
//! UUID, a Kafka record's key and headers) only the JSON answer has.

use super::ids::packed_partition_id;
use crate::planner::command::Claim;
use crate::reader::StoredMessage;
use bytes::BufMut;
use serde_json::Value;

pub const CONTENT_TYPE: &str = "application/x-queen-pop";
const MAGIC: &[u8; 4] = b"QPF1";
const FLAG_TRACE: u8 = 1;
const FLAG_PRODUCER: u8 = 2;

fn text16(out: &mut Vec<u8>, text: &str) {
    let bytes = &text.as_bytes()[..text.len().min(u16::MAX as usize)];
    out.put_u16_le(bytes.len() as u16);
    out.put_slice(bytes);
}

/// One claim's delivered messages with their delivery attempts.
pub struct Delivered<'a> {
    pub claim: &'a Claim,
    pub messages: Vec<(StoredMessage, u32)>,
}

/// The framed answer, or none when a partition id does not fit the format
/// (the caller then answers JSON, which the client reads as well).
pub fn encode(own: &Value, group: &str, delivered: &[Delivered<'_>]) -> Option<Vec<u8>> {
    let first = delivered.first()?.claim;
    let mut out = Vec::with_capacity(256);
    out.put_slice(MAGIC);
    out.put_u8(1);
    let own = own.to_string();
    out.put_u32_le(own.len() as u32);
    out.put_slice(own.as_bytes());
    text16(&mut out, &first.queue);
    text16(&mut out, &first.lease_id);
    text16(&mut out, group);
    out.put_u32_le(delivered.len() as u32);
    for d in delivered {
        let c = d.claim;
        out.put_u64_le(packed_partition_id(c.queue_id, c.partition_id)?);
        text16(&mut out, &c.partition);
        let start = d.messages.first().map_or(0, |(m, _)| m.offset);
        let end = d.messages.last().map_or(0, |(m, _)| m.offset);
        out.put_u64_le(start);
        out.put_u64_le(end);
        out.put_u32_le(d.messages.iter().map(|(_, a)| *a).max().unwrap_or(1));
        out.put_u32_le(d.messages.len() as u32);
        for (m, _) in &d.messages {
            let frame = frame(c.partition_id, m);
            out.put_u64_le(m.offset);
            out.put_i64_le(m.timestamp_us);
            out.put_u32_le(1);
            out.put_u8(0);
            out.put_u32_le(frame.len() as u32);
            out.put_slice(&frame);
        }
    }
    Some(out)
}

fn frame(partition: u64, m: &StoredMessage) -> Vec<u8> {
    let id = uuid::Uuid::parse_str(&super::ids::message_uuid(partition, m.offset)).expect("message ids are UUIDs");
    let trace = m.message.trace_id.as_deref().and_then(|t| uuid::Uuid::parse_str(t).ok());
    // The JSON answer's `data`: the payload as JSON, a non-JSON value as a string.
    let payload = serde_json::to_vec(&super::ids::value_json(&m.message)).expect("JSON serializes");
    let mut body = Vec::with_capacity(40 + payload.len());
    let producer = m.message.producer_sub.as_deref();
    let flags = if trace.is_some() { FLAG_TRACE } else { 0 } | if producer.is_some() { FLAG_PRODUCER } else { 0 };
    body.put_u8(flags);
    body.put_slice(id.as_bytes());
    if let Some(t) = trace {
        body.put_slice(t.as_bytes());
    }
    text16(&mut body, &m.message.transaction_id);
    if let Some(sub) = producer {
        text16(&mut body, sub);
    }
    body.put_slice(&payload);
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.put_u32_le(body.len() as u32);
    frame.put_slice(&body);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ids::unpack_partition_id;

    #[test]
    fn packed_partition_ids_round_trip_and_refuse_what_does_not_fit() {
        assert_eq!(packed_partition_id(7, 9).map(unpack_partition_id), Some((7, 9)));
        assert_eq!(packed_partition_id(1 << 32, 1), None);
    }
}
