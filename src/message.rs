//! One message as both front ends store it: the bytes a pop or a Kafka fetch
//! returns, with the ids Queen keeps beside them.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub transaction_id: String,
    pub trace_id: Option<String>,
    pub key: Option<Vec<u8>>,
    /// For an HTTP push, the payload's JSON text.
    pub value: Vec<u8>,
    pub headers: Vec<(String, Vec<u8>)>,
}

impl Message {
    pub fn encode(&self) -> Vec<u8> {
        bincode::serialize(self).expect("a message always serializes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, bincode::Error> {
        bincode::deserialize(bytes)
    }
}

/// The 16-byte hash of a transactionId that the qlog and the dedup rows keep.
pub fn transaction_hash(transaction_id: &str) -> [u8; 16] {
    xxh3_128(transaction_id.as_bytes()).to_le_bytes()
}
