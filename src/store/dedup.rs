//! The dedup rows: for every stored message with a transactionId, the offset
//! it landed at, so a retry answers the original offset.
//!
//! Two shapes for two readers. In RAM a push asks by hash, so each partition
//! has a hash map, and the window's expiry drops the oldest rows, so each
//! partition also lists its rows in offset order. In the checkpoint the rows are keyed (queue, partition,
//! offset) → hash: a partition's new rows then land at the end of its key
//! range, so a checkpoint rewrites a few B-tree pages per partition instead
//! of touching a random page for every message, and retention can drop a
//! partition's oldest rows as one range.

use super::keyspace::{ChangedRows, RowKey};
use super::rows::DedupRow;
use super::PartitionKey;
// Keyed by transactionId hashes on every push and apply: foldhash, seeded
// per process, costs a fraction of SipHash and still resists crafted ids.
use foldhash::HashMap;
use std::collections::VecDeque;

pub const KEYSPACE: &str = "dedup";

/// (queue id, partition id, offset): a dedup row's checkpoint key.
pub type DedupKey = (u64, u64, u64);

impl RowKey for (u64, u64, u64) {
    fn encode(&self) -> Vec<u8> {
        [self.0.to_be_bytes(), self.1.to_be_bytes(), self.2.to_be_bytes()].concat()
    }
    fn decode(b: &[u8]) -> Option<Self> {
        let word = |i: usize| Some(u64::from_be_bytes(b.get(i * 8..i * 8 + 8)?.try_into().ok()?));
        (b.len() == 24).then(|| Some((word(0)?, word(1)?, word(2)?))).flatten()
    }
}

#[derive(Default)]
pub struct DedupIndex {
    /// Per partition: transactionId hash → offset.
    by_hash: HashMap<PartitionKey, HashMap<[u8; 16], u64>>,
    /// Per partition: (offset, hash) of every row, by offset.
    by_offset: HashMap<PartitionKey, VecDeque<(u64, [u8; 16])>>,
    /// Changes since the last checkpoint, in order.
    changes: Vec<(DedupKey, Option<DedupRow>)>,
}

impl DedupIndex {
    /// How many rows it holds: one per stored message with a transactionId.
    pub fn row_count(&self) -> usize {
        self.by_offset.values().map(VecDeque::len).sum()
    }

    /// Loads a row read from the checkpoint.
    pub fn load_row(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let (q, p, offset) =
            DedupKey::decode(key).ok_or_else(|| format!("key of {} bytes does not decode", key.len()))?;
        let row: DedupRow = crate::codec::from_bytes(value).map_err(|e| format!("value does not decode: {e}"))?;
        self.add(q, p, row.hash, offset);
        Ok(())
    }

    /// The offset of the message with transactionId hash `hash`, if stored.
    pub fn get(&self, queue: u64, partition: u64, hash: &[u8; 16]) -> Option<u64> {
        self.by_hash.get(&(queue, partition))?.get(hash).copied()
    }

    /// Every row as ((queue, partition), offset, hash), in key order: for
    /// comparing two stores.
    pub fn rows(&self) -> Vec<(PartitionKey, u64, [u8; 16])> {
        let mut rows: Vec<_> =
            self.by_offset.iter().flat_map(|(k, m)| m.iter().map(move |(o, h)| (*k, *o, *h))).collect();
        rows.sort_unstable();
        rows
    }

    pub fn insert(&mut self, queue: u64, partition: u64, hash: [u8; 16], offset: u64) {
        self.add(queue, partition, hash, offset);
        self.changes.push(((queue, partition, offset), Some(DedupRow { hash })));
    }

    fn add(&mut self, queue: u64, partition: u64, hash: [u8; 16], offset: u64) {
        self.by_hash.entry((queue, partition)).or_default().insert(hash, offset);
        let order = self.by_offset.entry((queue, partition)).or_default();
        // Appends come in offset order, and so do the checkpoint's keys.
        match order.back() {
            Some((last, _)) if *last >= offset => {
                let at = order.partition_point(|(o, _)| *o < offset);
                order.insert(at, (offset, hash));
            }
            _ => order.push_back((offset, hash)),
        }
    }

    /// The offset of the partition's oldest row.
    pub fn oldest(&self, queue: u64, partition: u64) -> Option<u64> {
        self.by_offset.get(&(queue, partition))?.front().map(|(offset, _)| *offset)
    }

    /// Forgets a partition's rows below offset `below`; costs the rows it
    /// drops, not the rows it keeps.
    pub fn remove_below(&mut self, queue: u64, partition: u64, below: u64) {
        let key = (queue, partition);
        let Some(order) = self.by_offset.get_mut(&key) else { return };
        let by_hash = self.by_hash.get_mut(&key);
        let mut by_hash = by_hash;
        while order.front().is_some_and(|(offset, _)| *offset < below) {
            let (offset, hash) = order.pop_front().expect("looked at above");
            if let Some(rows) = by_hash.as_mut() {
                // A later message under the same id (stored again once its
                // row had gone) keeps its own row.
                if rows.get(&hash) == Some(&offset) {
                    rows.remove(&hash);
                }
            }
            self.changes.push(((queue, partition, offset), None));
        }
        if order.is_empty() {
            self.by_offset.remove(&key);
            self.by_hash.remove(&key);
        }
    }

    /// Forgets every row of a deleted partition.
    pub fn remove_partition(&mut self, queue: u64, partition: u64) {
        self.by_hash.remove(&(queue, partition));
        let Some(rows) = self.by_offset.remove(&(queue, partition)) else { return };
        self.changes.extend(rows.into_iter().map(|(offset, _)| ((queue, partition, offset), None)));
    }

    pub fn take_changes(&mut self) -> ChangedRows<DedupKey, DedupRow> {
        ChangedRows::new(KEYSPACE, std::mem::take(&mut self.changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_keys_sort_by_partition_then_offset() {
        let keys: Vec<Vec<u8>> =
            [(1u64, 2u64, 9u64), (1, 2, 10), (1, 3, 0), (2, 0, 0)].iter().map(|k| k.encode()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(DedupKey::decode(&keys[1]), Some((1, 2, 10)));
        assert_eq!(DedupKey::decode(&keys[1][..23]), None);
    }

    #[test]
    fn a_row_is_found_by_hash_and_logged_by_offset() {
        let mut index = DedupIndex::default();
        index.insert(1, 2, [7; 16], 40);
        assert_eq!(index.get(1, 2, &[7; 16]), Some(40));
        assert_eq!(index.get(1, 3, &[7; 16]), None);
        index.remove_partition(1, 2);
        assert_eq!(index.get(1, 2, &[7; 16]), None);
        assert_eq!(
            index.take_changes().rows_in_order(),
            vec![((1, 2, 40), Some(DedupRow { hash: [7; 16] })), ((1, 2, 40), None)]
        );
    }
}
