//! One message as both front ends store it: the bytes a pop or a Kafka fetch
//! returns, with the ids Queen keeps beside them.

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
}

impl Message {
    /// A message of a transactionId and a value and nothing else: no trace,
    /// key, headers or producer time, not sealed.
    pub fn new(transaction_id: String, value: Vec<u8>) -> Self {
        Self { transaction_id, trace_id: None, key: None, value, headers: vec![], timestamp_ms: None, encrypted: false }
    }

    pub fn encode(&self) -> Vec<u8> {
        crate::codec::to_bytes(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, bincode::Error> {
        crate::codec::from_bytes(bytes)
    }
}

/// The 16-byte hash of a transactionId that the qlog and the dedup rows keep.
pub fn transaction_hash(transaction_id: &str) -> [u8; 16] {
    xxh3_128(transaction_id.as_bytes()).to_le_bytes()
}
