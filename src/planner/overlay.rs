//! What the entries of the batch being written have decided but not yet
//! applied: names, ids, offsets and dedup rows that the next command of the
//! same batch must see. Cleared once the batch is applied.

use crate::store::Store;
use std::collections::HashMap;

#[derive(Default)]
pub struct Overlay {
    queues: HashMap<String, u64>,
    partitions: HashMap<(u64, String), u64>,
    next_offsets: HashMap<(u64, u64), u64>,
    dedup: HashMap<(u64, u64, [u8; 16]), u64>,
    next_queue_id: Option<u64>,
    next_partition_id: Option<u64>,
}

impl Overlay {
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    pub fn queue_id(&self, store: &Store, name: &str) -> Option<u64> {
        self.queues.get(name).copied().or_else(|| store.queue_id(name))
    }

    pub fn create_queue(&mut self, store: &Store, name: &str) -> u64 {
        let id = self.next_queue_id.unwrap_or(store.next_queue_id);
        self.next_queue_id = Some(id + 1);
        self.queues.insert(name.to_string(), id);
        id
    }

    pub fn partition_id(&self, store: &Store, queue: u64, name: &str) -> Option<u64> {
        self.partitions.get(&(queue, name.to_string())).copied().or_else(|| store.partition_id(queue, name))
    }

    pub fn create_partition(&mut self, store: &Store, queue: u64, name: &str) -> u64 {
        let id = self.next_partition_id.unwrap_or(store.next_partition_id);
        self.next_partition_id = Some(id + 1);
        self.partitions.insert((queue, name.to_string()), id);
        self.next_offsets.insert((queue, id), 0);
        id
    }

    pub fn dedup(&self, store: &Store, queue: u64, partition: u64, hash: &[u8; 16]) -> Option<u64> {
        self.dedup
            .get(&(queue, partition, *hash))
            .copied()
            .or_else(|| store.dedup.get(&(queue, partition, *hash)).map(|r| r.offset))
    }

    pub fn record_dedup(&mut self, queue: u64, partition: u64, hash: [u8; 16], offset: u64) {
        self.dedup.insert((queue, partition, hash), offset);
    }

    /// The next offset of the partition, reserved for one message.
    pub fn take_offset(&mut self, store: &Store, queue: u64, partition: u64) -> u64 {
        let next = self
            .next_offsets
            .entry((queue, partition))
            .or_insert_with(|| store.partition(queue, partition).map_or(0, |p| p.next_offset));
        let offset = *next;
        *next += 1;
        offset
    }
}
