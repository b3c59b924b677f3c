//! What the entries planned but not yet applied have decided: names, ids,
//! offsets and dedup rows that the next command must see. The proposer plans
//! while earlier entries are still being written, so every decision is
//! stamped with the log index of the entry that made it, and is dropped once
//! the store has applied that index. A leader that loses its leadership drops
//! the whole overlay (`Planner::lead`): what it planned may never commit.

use crate::placement::id_floor;
use crate::queue_options::QueueOptions;
use crate::store::rows::{CursorRow, GroupRow, KafkaTxnRow, KvRow, ProducerRow, ShareRow, TimerRow};
use crate::store::{CursorKey, ProducerKey, Store, CATALOGUE_ROW};
use std::borrow::Borrow;
// Consulted and updated for every planned command: foldhash, not SipHash.
use foldhash::{HashMap, HashMapExt, HashSet};
use std::hash::Hash;

/// Decisions keyed by `K`, each stamped with the log index of the entry
/// that made it.
#[derive(Clone)]
struct Layer<K, V>(HashMap<K, (u64, V)>);

impl<K, V> Default for Layer<K, V> {
    fn default() -> Self {
        Self(HashMap::new())
    }
}

impl<K: Hash + Eq, V> Layer<K, V> {
    fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.0.get(key).map(|(_, v)| v)
    }

    fn insert(&mut self, stamp: u64, key: K, value: V) {
        self.0.insert(key, (stamp, value));
    }

    /// The decision for `key`, made now: `init` gives its value as it stands.
    fn update(&mut self, stamp: u64, key: K, init: impl FnOnce() -> V) -> &mut V {
        let slot = self.0.entry(key).or_insert_with(|| (stamp, init()));
        slot.0 = stamp;
        &mut slot.1
    }

    fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, (_, v))| (k, v))
    }

    fn forget_through(&mut self, applied: u64) {
        self.0.retain(|_, (stamp, _)| *stamp > applied);
    }
}

/// A layer of rows that unapplied entries wrote (`Some`) or removed (`None`).
impl<K: Hash + Eq, V: Clone> Layer<K, Option<V>> {
    /// The row as the entries planned so far leave it: this layer's
    /// decision if it has one, else the store's row from `stored`.
    fn row<Q: Hash + Eq + ?Sized>(&self, key: &Q, stored: impl FnOnce() -> Option<V>) -> Option<V>
    where
        K: Borrow<Q>,
    {
        match self.get(key) {
            Some(row) => row.clone(),
            None => stored(),
        }
    }
}

/// A counter the planner advanced, stamped like a layer's rows.
#[derive(Default, Clone, Copy)]
struct Next(Option<(u64, u64)>);

impl Next {
    fn get(&self) -> Option<u64> {
        self.0.map(|(_, v)| v)
    }

    fn set(&mut self, stamp: u64, value: u64) {
        self.0 = Some((stamp, value));
    }

    fn forget_through(&mut self, applied: u64) {
        if self.0.is_some_and(|(stamp, _)| stamp <= applied) {
            self.0 = None;
        }
    }
}

#[derive(Default, Clone)]
pub struct Overlay {
    /// The log index of the entry being planned: what stamps new decisions.
    stamp: u64,
    /// The last index whose decisions were forgotten.
    forgotten: u64,
    /// Queue ids by name; `None`: deleted by an unapplied entry.
    queues: Layer<String, Option<u64>>,
    /// Queues deleted by unapplied entries: nothing may be planned on them,
    /// since their rows are gone by the time a later entry applies.
    deleted: Layer<u64, ()>,
    /// Queue options (JSON) set by unapplied entries.
    options: Layer<u64, String>,
    partitions: Layer<(u64, String), u64>,
    /// Partitions deleted by unapplied entries (`planner/cleanup.rs`).
    deleted_partitions: Layer<(u64, u64), ()>,
    next_offsets: Layer<(u64, u64), u64>,
    /// Log starts that unapplied retention moved.
    log_starts: Layer<(u64, u64), u64>,
    dedup: Layer<(u64, u64, [u8; 16]), u64>,
    /// Kafka producers' states written (`None`: forgotten) by unapplied
    /// entries.
    producers: Layer<ProducerKey, Option<ProducerRow>>,
    next_queue_id: Next,
    next_partition_id: Next,
    /// The raft group this planner plans for: it numbers queues and
    /// partitions from the group's own floor (`placement::id_floor`), so ids
    /// stay unique across groups even when the store has never numbered one
    /// (a fresh or snapshot-installed store starts at 1), and names the
    /// leases and streams queries it derives in the group.
    pub group: u32,
    /// Cursors moved (`None`: removed by a group delete) by unapplied entries.
    cursors: Layer<CursorKey, Option<CursorRow>>,
    /// Group rows written (`None`: removed by a group delete) by unapplied
    /// entries.
    groups: Layer<(u64, String), Option<GroupRow>>,
    /// Leases granted by unapplied entries: lease id → cursors.
    leases: Layer<String, Vec<CursorKey>>,
    /// Share group records held or given back by unapplied entries.
    shares: Layer<CursorKey, ShareRow>,
    /// KV rows written (`None`: deleted) by unapplied entries.
    kv: Layer<String, Option<KvRow>>,
    next_kv_version: Next,
    /// Timers scheduled (`Some`) or removed by unapplied entries.
    timers: Layer<String, Option<TimerRow>>,
    /// Kafka transactional ids' states written by unapplied entries.
    kafka_txns: Layer<String, KafkaTxnRow>,
}

impl Overlay {
    /// Decisions from now on belong to the entry at log index `index`.
    pub fn open_entry(&mut self, index: u64) {
        self.stamp = index;
    }

    /// The first kind of decision held, if any: once the store has applied
    /// every entry planned, a decision still held was made by no entry.
    pub fn held(&self) -> Option<&'static str> {
        let layers = [
            ("queues", self.queues.0.is_empty()),
            ("deleted", self.deleted.0.is_empty()),
            ("options", self.options.0.is_empty()),
            ("partitions", self.partitions.0.is_empty()),
            ("deleted_partitions", self.deleted_partitions.0.is_empty()),
            ("next_offsets", self.next_offsets.0.is_empty()),
            ("log_starts", self.log_starts.0.is_empty()),
            ("dedup", self.dedup.0.is_empty()),
            ("producers", self.producers.0.is_empty()),
            ("cursors", self.cursors.0.is_empty()),
            ("groups", self.groups.0.is_empty()),
            ("leases", self.leases.0.is_empty()),
            ("shares", self.shares.0.is_empty()),
            ("kv", self.kv.0.is_empty()),
            ("timers", self.timers.0.is_empty()),
            ("kafka_txns", self.kafka_txns.0.is_empty()),
            ("next_queue_id", self.next_queue_id.0.is_none()),
            ("next_partition_id", self.next_partition_id.0.is_none()),
            ("next_kv_version", self.next_kv_version.0.is_none()),
        ];
        layers.into_iter().find(|(_, empty)| !empty).map(|(name, _)| name)
    }

    /// The store holds every entry up to `applied`: their decisions are its
    /// rows now.
    pub fn forget_through(&mut self, applied: u64) {
        if applied <= self.forgotten {
            return;
        }
        self.forgotten = applied;
        self.queues.forget_through(applied);
        self.deleted.forget_through(applied);
        self.options.forget_through(applied);
        self.partitions.forget_through(applied);
        self.deleted_partitions.forget_through(applied);
        self.next_offsets.forget_through(applied);
        self.log_starts.forget_through(applied);
        self.dedup.forget_through(applied);
        self.producers.forget_through(applied);
        self.next_queue_id.forget_through(applied);
        self.next_partition_id.forget_through(applied);
        self.cursors.forget_through(applied);
        self.groups.forget_through(applied);
        self.leases.forget_through(applied);
        self.shares.forget_through(applied);
        self.kv.forget_through(applied);
        self.next_kv_version.forget_through(applied);
        self.timers.forget_through(applied);
        self.kafka_txns.forget_through(applied);
    }

    /// A transactional id's coordinator state as the entries planned so far
    /// leave it.
    pub fn kafka_txn(&self, store: &Store, transactional_id: &str) -> Option<KafkaTxnRow> {
        match self.kafka_txns.get(transactional_id) {
            Some(row) => Some(row.clone()),
            None => store.kafka_txn(transactional_id).cloned(),
        }
    }

    pub fn put_kafka_txn(&mut self, transactional_id: String, row: KafkaTxnRow) {
        self.kafka_txns.insert(self.stamp, transactional_id, row);
    }

    /// Every transactional id with its state as the entries planned so far
    /// leave it, in id order.
    pub fn kafka_txn_rows(&self, store: &Store) -> Vec<(String, KafkaTxnRow)> {
        let mut ids: Vec<String> = store.kafka_txns().map(|(k, _)| k.clone()).collect();
        ids.extend(self.kafka_txns.iter().map(|(k, _)| k.clone()));
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().filter_map(|id| self.kafka_txn(store, &id).map(|row| (id, row))).collect()
    }

    /// A partition's log start as the entries planned so far leave it: no
    /// message below it can be delivered.
    pub fn log_start(&self, store: &Store, queue: u64, partition: u64) -> u64 {
        let stored = store.partition(queue, partition).map_or(0, |row| row.log_start);
        self.log_starts.get(&(queue, partition)).map_or(stored, |planned| stored.max(*planned))
    }

    pub fn move_log_start(&mut self, queue: u64, partition: u64, log_start: u64) {
        self.log_starts.insert(self.stamp, (queue, partition), log_start);
    }

    pub fn queue_id(&self, store: &Store, name: &str) -> Option<u64> {
        match self.queues.get(name) {
            Some(id) => *id,
            None => store.queue_id(name),
        }
    }

    pub fn create_queue(&mut self, store: &Store, name: &str) -> u64 {
        let id = self.next_queue_id.get().unwrap_or(store.next_queue_id.max(id_floor(self.group) + 1));
        // Queue ids name their group (`placement::group_of_id`): one past
        // the group's range would name another.
        assert!(
            self.group == 0 || id < id_floor(self.group + 1),
            "raft group {} has given every queue id of its range: queue id {id} would name group {}",
            self.group,
            self.group + 1
        );
        self.next_queue_id.set(self.stamp, id + 1);
        self.queues.insert(self.stamp, name.to_string(), Some(id));
        id
    }

    /// Records that the entry being planned deletes the queue `name` (id `id`).
    pub fn delete_queue(&mut self, name: &str, id: u64) {
        self.queues.insert(self.stamp, name.to_string(), None);
        self.deleted.insert(self.stamp, id, ());
    }

    /// The queue's options (JSON) as the entries planned so far leave them;
    /// none for a queue created by a push and never configured.
    pub fn queue_options(&self, store: &Store, queue: u64) -> Option<String> {
        self.options.get(&queue).cloned().or_else(|| {
            let name = store.queue_name(queue)?;
            store.queues.get(&name.to_string()).map(|r| r.options.clone())
        })
    }

    /// The queue's `maxSize` as the entries planned so far leave it; 0 for
    /// none.
    pub fn max_size(&self, store: &Store, queue: u64) -> u64 {
        match self.options.get(&queue) {
            Some(options) => QueueOptions::parse(options).max_size(),
            None => store.traits(queue).max_size,
        }
    }

    pub fn set_queue_options(&mut self, queue: u64, options: String) {
        self.options.insert(self.stamp, queue, options);
    }

    /// Whether an unapplied entry deletes the queue.
    pub fn is_deleted(&self, queue: u64) -> bool {
        self.deleted.get(&queue).is_some()
    }

    pub fn partition_id(&self, store: &Store, queue: u64, name: &str) -> Option<u64> {
        if self.is_deleted(queue) {
            return None;
        }
        self.partitions
            .get(&(queue, name.to_string()))
            .copied()
            .or_else(|| store.partition_id(queue, name).filter(|p| !self.is_partition_deleted(queue, *p)))
    }

    /// Whether an unapplied entry deletes the partition, or its queue.
    pub fn is_partition_deleted(&self, queue: u64, partition: u64) -> bool {
        self.is_deleted(queue) || self.deleted_partitions.get(&(queue, partition)).is_some()
    }

    /// Whether the partition exists once the entries planned so far apply.
    pub fn partition_exists(&self, store: &Store, queue: u64, partition: u64) -> bool {
        !self.is_partition_deleted(queue, partition)
            && (store.partition(queue, partition).is_some() || self.next_offsets.get(&(queue, partition)).is_some())
    }

    /// Records that the entry being planned deletes the partition.
    pub fn delete_partition(&mut self, queue: u64, partition: u64) {
        self.deleted_partitions.insert(self.stamp, (queue, partition), ());
    }

    /// The partitions unapplied entries changed: their offsets, a cursor on
    /// them, their existence.
    pub fn touched_partitions(&self) -> HashSet<(u64, u64)> {
        let offsets = self.next_offsets.iter().map(|(k, _)| *k);
        let deleted = self.deleted_partitions.iter().map(|(k, _)| *k);
        let cursors = self.cursors.iter().map(|((q, p, _), _)| (*q, *p));
        offsets.chain(deleted).chain(cursors).collect()
    }

    pub fn create_partition(&mut self, store: &Store, queue: u64, name: &str) -> u64 {
        // Partition ids are looked up by queue, never routed by: past the
        // group's range they stay unique in the store, only their message
        // ids may repeat another group's.
        let id = self.next_partition_id.get().unwrap_or(store.next_partition_id.max(id_floor(self.group) + 1));
        self.next_partition_id.set(self.stamp, id + 1);
        self.partitions.insert(self.stamp, (queue, name.to_string()), id);
        self.next_offsets.insert(self.stamp, (queue, id), 0);
        id
    }

    /// Messages of the queue a group has not finished, as the planned entries leave
    /// them: over every partition, from the group's cursor (or the log
    /// start) to the next offset.
    pub fn unfinished(&self, store: &Store, queue: u64, group: &str) -> u64 {
        self.partition_ends(store, queue)
            .into_iter()
            .map(|(p, next)| match self.cursor(store, &(queue, p, group.to_string())) {
                Some(c) => next.saturating_sub(c.committed).saturating_sub(c.done_above.len() as u64),
                None => next.saturating_sub(store.partition(queue, p).map_or(0, |row| row.log_start)),
            })
            .sum()
    }

    /// How many partitions the queue has, counting those unapplied entries created.
    pub fn partition_count(&self, store: &Store, queue: u64) -> usize {
        self.partitions_of(store, queue).count()
    }

    /// The queue's partition ids: the store's, then those unapplied entries created.
    fn partitions_of<'a>(&'a self, store: &'a Store, queue: u64) -> impl Iterator<Item = u64> + 'a {
        let created = self.partitions.iter().filter(move |((q, _), _)| *q == queue).map(|(_, p)| *p);
        let stored = store.partitions.range((queue, 0)..=(queue, u64::MAX)).map(|((_, p), _)| *p);
        stored.filter(move |p| self.deleted_partitions.get(&(queue, *p)).is_none()).chain(created)
    }

    /// Every partition of the queue with its next offset, as the entries
    /// planned so far leave them, ascending by id.
    pub fn partition_ends(&self, store: &Store, queue: u64) -> Vec<(u64, u64)> {
        let end = |p: u64| {
            let stored = store.partition(queue, p).map_or(0, |row| row.next_offset);
            self.next_offsets.get(&(queue, p)).copied().unwrap_or(stored)
        };
        let mut ends: Vec<(u64, u64)> = self.partitions_of(store, queue).map(|p| (p, end(p))).collect();
        ends.sort_unstable();
        ends
    }

    /// The effect catalogue version the entries planned so far let this
    /// planner write (`Store::catalogue`).
    pub fn catalogue(&self, store: &Store) -> u32 {
        match self.kv.get(CATALOGUE_ROW) {
            Some(row) => row.as_ref().and_then(|r| r.value.parse().ok()).unwrap_or(1),
            None => store.catalogue(),
        }
    }

    /// An idempotent Kafka producer's state in a partition as the entries
    /// planned so far leave it.
    pub fn producer(&self, store: &Store, key: &ProducerKey) -> Option<ProducerRow> {
        self.producers.row(key, || store.producers.get(key).cloned())
    }

    pub fn put_producer(&mut self, key: ProducerKey, row: Option<ProducerRow>) {
        self.producers.insert(self.stamp, key, row);
    }

    pub fn dedup(&self, store: &Store, queue: u64, partition: u64, hash: &[u8; 16]) -> Option<u64> {
        self.dedup.get(&(queue, partition, *hash)).copied().or_else(|| store.dedup.get(queue, partition, hash))
    }

    pub fn record_dedup(&mut self, queue: u64, partition: u64, hash: [u8; 16], offset: u64) {
        self.dedup.insert(self.stamp, (queue, partition, hash), offset);
    }

    /// `n` consecutive offsets of the partition; answers the first.
    pub fn take_offsets(&mut self, store: &Store, queue: u64, partition: u64, n: u32) -> u64 {
        let next = self
            .next_offsets
            .update(self.stamp, (queue, partition), || store.partition(queue, partition).map_or(0, |p| p.next_offset));
        let offset = *next;
        *next += u64::from(n);
        offset
    }

    /// The cursor as the planned entries left it, if the group has one.
    pub fn cursor(&self, store: &Store, key: &CursorKey) -> Option<CursorRow> {
        if self.is_partition_deleted(key.0, key.1) {
            return None;
        }
        self.cursors.row(key, || store.cursors.get(key).cloned())
    }

    /// The cursors `group` holds on every queue, as the entries planned so
    /// far leave them.
    pub fn group_cursors(&self, store: &Store, group: &str) -> Vec<CursorKey> {
        let wanted = |k: &CursorKey| k.2 == group;
        let mut keys: Vec<CursorKey> = store.cursors.iter().map(|(k, _)| k).filter(|k| wanted(k)).cloned().collect();
        keys.extend(self.cursors.iter().map(|(k, _)| k).filter(|k| wanted(k)).cloned());
        keys.sort_unstable();
        keys.dedup();
        keys.retain(|k| self.cursor(store, k).is_some());
        keys
    }

    /// Removes a group's cursor for the commands planned after this one.
    pub fn remove_cursor(&mut self, key: CursorKey) {
        self.cursors.insert(self.stamp, key, None);
    }

    /// Removes the group's row on `queue` for the commands planned after
    /// this one.
    pub fn remove_group(&mut self, queue: u64, group: &str) {
        self.groups.insert(self.stamp, (queue, group.to_string()), None);
    }

    pub fn put_cursor(&mut self, key: CursorKey, row: CursorRow) {
        if let Some(lease) = &row.lease {
            let holders = self.leases.update(self.stamp, lease.id.clone(), Vec::new);
            if !holders.contains(&key) {
                holders.push(key.clone());
            }
        }
        self.cursors.insert(self.stamp, key, Some(row));
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

    /// Every cursor a lease may hold: granted before, or by an unapplied entry.
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

    /// The records of a partition the group's share members hold, as the
    /// planned entries leave them: none once its cursor is gone.
    pub fn share(&self, store: &Store, key: &CursorKey) -> ShareRow {
        if self.cursor(store, key).is_none() {
            return ShareRow::default();
        }
        match self.shares.get(key) {
            Some(row) => row.clone(),
            None => store.shares.get(key).cloned().unwrap_or_default(),
        }
    }

    /// Places a group's cursor at `offset` afresh, as a `Seek` does: what it
    /// knew of the offsets, and the records its share members held, go.
    pub fn place_cursor(&mut self, store: &Store, key: CursorKey, offset: u64) {
        if self.share(store, &key) != ShareRow::default() {
            self.put_share(key.clone(), ShareRow::default());
        }
        self.put_cursor(key, CursorRow { committed: offset, ..Default::default() });
    }

    pub fn put_share(&mut self, key: CursorKey, row: ShareRow) {
        self.shares.insert(self.stamp, key, row);
    }

    /// The partitions where share members hold records or wait out retry
    /// delays, of `group` or of every group, as the planned entries leave them.
    pub fn share_keys(&self, store: &Store, group: Option<&str>) -> Vec<CursorKey> {
        let wanted = |k: &CursorKey| group.is_none_or(|g| k.2 == g);
        let mut keys: Vec<CursorKey> = store.shares.iter().map(|(k, _)| k).filter(|k| wanted(k)).cloned().collect();
        keys.extend(self.shares.iter().map(|(k, _)| k).filter(|k| wanted(k)).cloned());
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    pub fn group(&self, store: &Store, queue: u64, group: &str) -> Option<GroupRow> {
        let key = (queue, group.to_string());
        self.groups.row(&key, || store.groups.get(&key).cloned())
    }

    /// The queues on which `group` has a row, as the entries planned so far
    /// leave them.
    pub fn group_rows<'a>(&'a self, store: &'a Store, group: &'a str) -> impl Iterator<Item = u64> + 'a {
        let store_rows = store.groups.iter().map(|(k, _)| k);
        let overlay_rows = self.groups.iter().map(|(k, _)| k);
        store_rows
            .chain(overlay_rows)
            .filter(move |k| k.1 == group && self.group(store, k.0, group).is_some())
            .map(|k| k.0)
    }

    pub fn put_group(&mut self, queue: u64, group: &str, row: GroupRow) {
        self.groups.insert(self.stamp, (queue, group.to_string()), Some(row));
    }

    /// A KV row as the planned entries left it, expired or not.
    pub fn kv_row(&self, store: &Store, key: &str) -> Option<KvRow> {
        self.kv.row(key, || store.kv.get(&key.to_string()).cloned())
    }

    pub fn kv_keys_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
        self.kv.iter().map(|(k, _)| k).filter(move |k| k.starts_with(prefix)).cloned()
    }

    pub fn put_kv(&mut self, key: String, row: Option<KvRow>) {
        self.kv.insert(self.stamp, key, row);
    }

    pub fn next_kv_version(&self, store: &Store) -> u64 {
        self.next_kv_version.get().unwrap_or(store.next_kv_version)
    }

    pub fn set_next_kv_version(&mut self, next: u64) {
        self.next_kv_version.set(self.stamp, next);
    }

    pub fn timer(&self, store: &Store, key: &str) -> Option<TimerRow> {
        self.timers.row(key, || store.timer(key).cloned())
    }

    pub fn put_timer(&mut self, key: String, row: Option<TimerRow>) {
        self.timers.insert(self.stamp, key, row);
    }
}
