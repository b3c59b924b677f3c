//! One message as both front ends store it: the bytes a pop or a Kafka fetch
//! returns, with the ids Queen keeps beside them.
//!
//! Two layouts are on disk. The first, written by earlier builds and still
//! for every message without a producer identity, is [`Message`] without
//! `producer_sub`. A message with one is written in the second: one marker
//! byte `0xFE`, then the bincode of the whole [`Message`]. The first layout
//! never starts with `0xFE` (its first byte starts the varint length of the
//! transactionId, and a bincode varint never starts with `0xFE`), so the
//! marker alone tells the two apart and older directories read as before.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub transaction_id: String,
    pub trace_id: Option<String>,
    #[serde(with = "serde_bytes")]
    pub key: Option<Vec<u8>>,
    /// For an HTTP push, the payload's JSON text.
    #[serde(with = "serde_bytes")]
    pub value: Vec<u8>,
    pub headers: Vec<(String, serde_bytes::ByteBuf)>,
    /// The producer's time (Kafka's CreateTime); none for an HTTP push,
    /// whose time is the append's.
    pub timestamp_ms: Option<i64>,
    /// The value is sealed (`encryption.rs`): nonce, ciphertext and tag.
    pub encrypted: bool,
    /// The producer's authenticated identity (a verified JWT's `sub`),
    /// stamped by the node, never taken from the client (`producerSub`).
    pub producer_sub: Option<String>,
}

/// The first byte of a blob in the layout of the whole [`Message`].
const WHOLE_LAYOUT: u8 = 0xFE;

/// The first layout: [`Message`] without `producer_sub`, as written.
#[derive(Serialize)]
struct FirstLayoutOut<'a> {
    transaction_id: &'a str,
    trace_id: &'a Option<String>,
    #[serde(with = "serde_bytes")]
    key: &'a Option<Vec<u8>>,
    #[serde(with = "serde_bytes")]
    value: &'a [u8],
    headers: &'a [(String, serde_bytes::ByteBuf)],
    timestamp_ms: Option<i64>,
    encrypted: bool,
}

/// The first layout as read.
#[derive(Deserialize)]
struct FirstLayoutIn {
    transaction_id: String,
    trace_id: Option<String>,
    #[serde(with = "serde_bytes")]
    key: Option<Vec<u8>>,
    #[serde(with = "serde_bytes")]
    value: Vec<u8>,
    headers: Vec<(String, serde_bytes::ByteBuf)>,
    timestamp_ms: Option<i64>,
    encrypted: bool,
}

impl Message {
    /// A message of a transactionId and a value and nothing else: no trace,
    /// key, headers or producer time, not sealed.
    pub fn new(transaction_id: String, value: Vec<u8>) -> Self {
        Self {
            transaction_id,
            trace_id: None,
            key: None,
            value,
            headers: vec![],
            timestamp_ms: None,
            encrypted: false,
            producer_sub: None,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        if self.producer_sub.is_some() {
            let mut out = vec![WHOLE_LAYOUT];
            out.extend_from_slice(&crate::codec::to_bytes(self));
            return out;
        }
        crate::codec::to_bytes(&FirstLayoutOut {
            transaction_id: &self.transaction_id,
            trace_id: &self.trace_id,
            key: &self.key,
            value: &self.value,
            headers: &self.headers,
            timestamp_ms: self.timestamp_ms,
            encrypted: self.encrypted,
        })
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, bincode::Error> {
        if let Some(whole) = bytes.strip_prefix(&[WHOLE_LAYOUT]) {
            return crate::codec::from_bytes(whole);
        }
        let first: FirstLayoutIn = crate::codec::from_bytes(bytes)?;
        Ok(Self {
            transaction_id: first.transaction_id,
            trace_id: first.trace_id,
            key: first.key,
            value: first.value,
            headers: first.headers,
            timestamp_ms: first.timestamp_ms,
            encrypted: first.encrypted,
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

    #[test]
    fn a_message_without_a_producer_keeps_the_first_layout() {
        // The 7-byte smallest blob of docs/storage.md, as earlier builds wrote it.
        let m = Message::new(String::new(), vec![]);
        assert_eq!(m.encode(), [0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Message::decode(&[0, 0, 0, 0, 0, 0, 0]).unwrap(), m);
    }

    #[test]
    fn a_producer_identity_reads_back() {
        let m = Message { producer_sub: Some("alice".into()), ..Message::new("t1".into(), b"{}".to_vec()) };
        let blob = m.encode();
        assert_eq!(blob[0], WHOLE_LAYOUT);
        assert_eq!(Message::decode(&blob).unwrap(), m);
    }
}
