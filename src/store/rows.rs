//! The rows of each keyspace.

use serde::{Deserialize, Serialize};

/// `queues`: queue name → its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRow {
    pub id: u64,
    pub created_us: i64,
}

/// `partitions`: (queue id, partition id) → its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRow {
    pub name: String,
    /// The offset the next append gets: the high watermark.
    pub next_offset: u64,
    /// The oldest offset still stored.
    pub log_start: u64,
    pub created_us: i64,
    pub last_write_us: i64,
}

/// `dedup`: (queue id, partition id, transactionId hash) → where the first
/// push with that transactionId landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DedupRow {
    pub offset: u64,
}
