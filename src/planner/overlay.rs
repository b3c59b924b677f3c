//! What the entries of the batch being written have decided but not yet
//! applied: names, ids, offsets and dedup rows that the next command of the
//! same batch must see. Cleared once the batch is applied.

use crate::store::rows::{CursorRow, GroupRow, KvRow, TimerRow};
use crate::store::{CursorKey, Store};
use std::collections::HashMap;

#[derive(Default, Clone)]
pub struct Overlay {
    queues: HashMap<String, u64>,
    partitions: HashMap<(u64, String), u64>,
    next_offsets: HashMap<(u64, u64), u64>,
    dedup: HashMap<(u64, u64, [u8; 16]), u64>,
    next_queue_id: Option<u64>,
    next_partition_id: Option<u64>,
    cursors: HashMap<CursorKey, CursorRow>,
    groups: HashMap<(u64, String), GroupRow>,
    /// Leases granted by this batch: lease id → cursors.
    leases: HashMap<String, Vec<CursorKey>>,
    /// KV rows written (`None`: deleted) by this batch.
    kv: HashMap<String, Option<KvRow>>,
    next_kv_version: Option<u64>,
    /// Timers scheduled (`Some`) or removed by this batch.
    timers: HashMap<String, Option<TimerRow>>,
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

    /// Messages of the queue a group has not finished, as the batch leaves
    /// them: over every partition, from the group's cursor (or the log
    /// start) to the next offset.
    pub fn unfinished(&self, store: &Store, queue: u64, group: &str) -> u64 {
        store
            .partitions
            .range((queue, 0)..=(queue, u64::MAX))
            .map(|((q, p), row)| {
                let next = self.next_offsets.get(&(*q, *p)).copied().unwrap_or(row.next_offset);
                match self.cursor(store, &(*q, *p, group.to_string())) {
                    Some(c) => next.saturating_sub(c.committed).saturating_sub(c.done_above.len() as u64),
                    None => next - row.log_start,
                }
            })
            .sum()
    }

    /// How many partitions the queue has, counting those this batch created.
    pub fn partition_count(&self, store: &Store, queue: u64) -> usize {
        store.partitions.range((queue, 0)..=(queue, u64::MAX)).count()
            + self.partitions.keys().filter(|(q, _)| *q == queue).count()
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

    /// The cursor as the batch left it, if the group has one.
    pub fn cursor(&self, store: &Store, key: &CursorKey) -> Option<CursorRow> {
        self.cursors.get(key).cloned().or_else(|| store.cursors.get(key).cloned())
    }

    pub fn put_cursor(&mut self, key: CursorKey, row: CursorRow) {
        if let Some(lease) = &row.lease {
            let holders = self.leases.entry(lease.id.clone()).or_default();
            if !holders.contains(&key) {
                holders.push(key.clone());
            }
        }
        self.cursors.insert(key, row);
    }

    /// Changes a cursor with one of `cursor`'s moves.
    pub fn update_cursor(&mut self, store: &Store, key: &CursorKey, f: impl FnOnce(&mut CursorRow)) -> bool {
        let Some(mut row) = self.cursor(store, key) else {
            return false;
        };
        f(&mut row);
        self.put_cursor(key.clone(), row);
        true
    }

    /// Every cursor a lease may hold: granted before, or by this batch.
    pub fn lease_holders(&self, store: &Store, lease_id: &str) -> Vec<CursorKey> {
        let mut out: Vec<CursorKey> = store.lease_holders(lease_id).to_vec();
        for k in self.leases.get(lease_id).into_iter().flatten() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
        out.retain(|k| self.cursor(store, k).and_then(|c| c.lease).is_some_and(|l| l.id == lease_id));
        out
    }

    pub fn group(&self, store: &Store, queue: u64, group: &str) -> Option<GroupRow> {
        let key = (queue, group.to_string());
        self.groups.get(&key).cloned().or_else(|| store.groups.get(&key).cloned())
    }

    pub fn put_group(&mut self, queue: u64, group: &str, row: GroupRow) {
        self.groups.insert((queue, group.to_string()), row);
    }

    /// A KV row as the batch left it, expired or not.
    pub fn kv_row(&self, store: &Store, key: &str) -> Option<KvRow> {
        match self.kv.get(key) {
            Some(row) => row.clone(),
            None => store.kv.get(&key.to_string()).cloned(),
        }
    }

    pub fn kv_keys_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
        self.kv.keys().filter(move |k| k.starts_with(prefix)).cloned()
    }

    pub fn put_kv(&mut self, key: String, row: Option<KvRow>) {
        self.kv.insert(key, row);
    }

    pub fn next_kv_version(&self, store: &Store) -> u64 {
        self.next_kv_version.unwrap_or(store.next_kv_version)
    }

    pub fn set_next_kv_version(&mut self, next: u64) {
        self.next_kv_version = Some(next);
    }

    pub fn timer(&self, store: &Store, key: &str) -> Option<TimerRow> {
        match self.timers.get(key) {
            Some(row) => row.clone(),
            None => store.timer(key).cloned(),
        }
    }

    pub fn put_timer(&mut self, key: String, row: Option<TimerRow>) {
        self.timers.insert(key, row);
    }
}
