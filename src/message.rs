//! One message as both front ends store it: the bytes a pop or a Kafka fetch
//! returns, with the ids Queen keeps beside them.
//!
//! Two layouts are on disk. The first, written by earlier builds and still
//! for every plain message, has no way to say null and no producer
//! identity: its value and header values are plain bytes. A message whose
//! value or a header value is null (a Kafka tombstone, say), or that carries
//! its producer's identity, is written in the second, which is one marker
//! byte `0xFE` and then the bincode of the whole [`Message`]. Bincode never
//! starts a blob of the first layout with `0xFE` (its first byte is the
//! varint length of the transactionId, and a varint never starts with
//! `0xFE`), so the marker alone tells the two apart.

use protocol::records::PlainRecord;
use serde::{Deserialize, Serialize};
use serde_bytes::{ByteBuf, Bytes};
use xxhash_rust::xxh3::xxh3_128;

/// The first byte of a blob in the layout of the whole [`Message`].
pub(crate) const WHOLE_LAYOUT: u8 = 0xFE;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub transaction_id: String,
    pub trace_id: Option<String>,
    #[serde(with = "serde_bytes")]
    pub key: Option<Vec<u8>>,
    /// For an HTTP push, the payload's JSON text; none for a Kafka record
    /// with a null value.
    #[serde(with = "serde_bytes")]
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<ByteBuf>)>,
    /// The producer's time (Kafka's CreateTime); none for an HTTP push,
    /// whose time is the append's.
    pub timestamp_ms: Option<i64>,
    /// The value is sealed (`encryption.rs`): nonce, ciphertext and tag.
    pub encrypted: bool,
    /// The producer's authenticated identity (a verified JWT's `sub`),
    /// stamped by the node, never taken from the client (`producerSub`).
    pub producer_sub: Option<String>,
}

/// The layout without nulls as written: [`Message`] field for field, but
/// the value and the header values are bytes.
#[derive(Serialize)]
struct PlainLayoutOut<'a> {
    transaction_id: &'a str,
    trace_id: &'a Option<String>,
    #[serde(with = "serde_bytes")]
    key: &'a Option<Vec<u8>>,
    #[serde(with = "serde_bytes")]
    value: &'a [u8],
    headers: Vec<(&'a str, &'a Bytes)>,
    timestamp_ms: Option<i64>,
    encrypted: bool,
}

/// The layout without nulls as read.
#[derive(Deserialize)]
struct PlainLayoutIn {
    transaction_id: String,
    trace_id: Option<String>,
    #[serde(with = "serde_bytes")]
    key: Option<Vec<u8>>,
    #[serde(with = "serde_bytes")]
    value: Vec<u8>,
    headers: Vec<(String, ByteBuf)>,
    timestamp_ms: Option<i64>,
    encrypted: bool,
}

impl Message {
    /// A Kafka record as Queen keeps it: what the producer sent (key,
    /// value, headers, CreateTime) under `transaction_id`, with the
    /// producer's authenticated identity if it had one.
    pub fn from_kafka(record: &PlainRecord, transaction_id: String, producer_sub: Option<String>) -> Self {
        Self {
            transaction_id,
            trace_id: None,
            key: record.key.as_ref().map(|k| k.to_vec()),
            value: record.value.as_ref().map(|v| v.to_vec()),
            headers: record
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.as_ref().map(|b| ByteBuf::from(b.to_vec()))))
                .collect(),
            timestamp_ms: Some(record.timestamp_ms),
            encrypted: false,
            producer_sub,
        }
    }

    /// A message of a transactionId and a value and nothing else: no trace,
    /// key, headers or producer time, not sealed.
    pub fn new(transaction_id: String, value: Vec<u8>) -> Self {
        Self {
            transaction_id,
            trace_id: None,
            key: None,
            value: Some(value),
            headers: vec![],
            timestamp_ms: None,
            encrypted: false,
            producer_sub: None,
        }
    }

    /// The value as bytes, empty for a null one.
    pub fn value_bytes(&self) -> &[u8] {
        self.value.as_deref().unwrap_or_default()
    }

    pub fn encode(&self) -> Vec<u8> {
        let has_null = self.value.is_none() || self.headers.iter().any(|(_, v)| v.is_none());
        if has_null || self.producer_sub.is_some() {
            let mut out = vec![WHOLE_LAYOUT];
            out.extend_from_slice(&crate::codec::to_bytes(self));
            return out;
        }
        crate::codec::to_bytes(&PlainLayoutOut {
            transaction_id: &self.transaction_id,
            trace_id: &self.trace_id,
            key: &self.key,
            value: self.value_bytes(),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), Bytes::new(v.as_deref().map_or(&[], |b| b))))
                .collect(),
            timestamp_ms: self.timestamp_ms,
            encrypted: self.encrypted,
        })
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, bincode::Error> {
        if let Some(whole) = bytes.strip_prefix(&[WHOLE_LAYOUT]) {
            return crate::codec::from_bytes(whole);
        }
        let plain: PlainLayoutIn = crate::codec::from_bytes(bytes)?;
        Ok(Self {
            transaction_id: plain.transaction_id,
            trace_id: plain.trace_id,
            key: plain.key,
            value: Some(plain.value),
            headers: plain.headers.into_iter().map(|(k, v)| (k, Some(v))).collect(),
            timestamp_ms: plain.timestamp_ms,
            encrypted: plain.encrypted,
            producer_sub: None,
        })
    }
}

/// The 16-byte hash of a transactionId that the qlog and the dedup rows keep.
pub fn transaction_hash(transaction_id: &str) -> [u8; 16] {
    xxh3_128(transaction_id.as_bytes()).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kafka_record(value: Option<&[u8]>, header: Option<&[u8]>) -> Message {
        Message {
            key: None,
            value: value.map(<[u8]>::to_vec),
            headers: vec![("h".into(), header.map(ByteBuf::from))],
            timestamp_ms: Some(1_764_000_000_000),
            ..Message::new("kafka:1:0:7".into(), vec![])
        }
    }

    #[test]
    fn null_and_empty_read_back_apart() {
        for (value, header) in
            [(None, None), (Some(&b""[..]), None), (None, Some(&b""[..])), (Some(&b""[..]), Some(&b"v"[..]))]
        {
            let m = kafka_record(value, header);
            assert_eq!(Message::decode(&m.encode()).unwrap(), m, "value {value:?}, header {header:?}");
        }
    }

    #[test]
    fn a_message_without_nulls_keeps_the_first_layout() {
        // The 11-byte example of docs/storage.md, as earlier builds wrote it.
        let example = [0x02, b't', b'1', 0, 0, 0x02, b'{', b'}', 0, 0, 0];
        let m = Message::new("t1".into(), b"{}".to_vec());
        assert_eq!(m.encode(), example);
        assert_eq!(Message::decode(&example).unwrap(), m);
        assert_eq!(kafka_record(None, Some(b"v")).encode()[0], WHOLE_LAYOUT);
    }

    #[test]
    fn a_producer_identity_reads_back() {
        let m = Message { producer_sub: Some("alice".into()), ..Message::new("t1".into(), b"{}".to_vec()) };
        let blob = m.encode();
        assert_eq!(blob[0], WHOLE_LAYOUT);
        assert_eq!(Message::decode(&blob).unwrap(), m);
    }
}
