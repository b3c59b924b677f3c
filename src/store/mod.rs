//! The store: every keyspace in RAM, checkpointed to `store/data.mdb`. No
//! answer waits for a checkpoint; the qlog is what makes a write durable, and
//! the checkpoint only bounds what a restart replays.

pub mod checkpoint;
pub mod checkpointer;
pub(crate) mod dedup;
pub(crate) mod keyspace;
pub mod locator;
pub mod rows;
pub(crate) mod scrub;

use crate::log_id::LogId;
use crate::queue_options::QueueOptions;
use checkpoint::{CheckpointError, LoadedRows};
use dedup::DedupIndex;
use keyspace::{EncodeChanges, Keyspace};
use locator::Locator;
use rows::{
    AbortedTxnRow, CursorRow, DlqRow, GroupRow, KafkaTxnRow, KafkaTxnState, KvRow, MembershipRow, PartitionRow,
    ProducerRow, QueueRow, ShareRow, TimerRow,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

pub type PartitionKey = (u64, u64);
/// (queue id, partition id, consumer group).
pub type CursorKey = (u64, u64, String);
/// (queue id, partition id, consumer group, offset).
pub type DlqKey = (u64, u64, String, u64);
/// (queue id, partition id, Kafka producer id).
pub type ProducerKey = (u64, u64, u64);
/// The key of the one row of `membership`.
pub const MEMBERSHIP_ROW: &str = "current";
/// The KV row (namespace `queen-cluster`, key `effect-catalogue`) that holds
/// the effect catalogue version the cluster writes (`version_gate.rs`).
pub const CATALOGUE_ROW: &str = "queen-cluster\0effect-catalogue";

pub struct Store {
    /// The last entry applied.
    pub applied: LogId,
    /// The node that led when the last entry applied was written: with
    /// `applied`, openraft's last applied log id.
    pub applied_leader: u64,
    /// The planner's time of the last entry applied (RAM only): every batch
    /// not yet applied carries a later one.
    pub applied_us: i64,
    pub next_queue_id: u64,
    pub next_partition_id: u64,
    /// The version the next KV write gets.
    pub next_kv_version: u64,
    pub queues: Keyspace<String, QueueRow>,
    pub partitions: Keyspace<PartitionKey, PartitionRow>,
    pub dedup: DedupIndex,
    /// Idempotent Kafka producers' state per partition (`rows::ProducerRow`).
    pub producers: Keyspace<ProducerKey, ProducerRow>,
    pub cursors: Keyspace<CursorKey, CursorRow>,
    /// The metadata string of a group's last Kafka offset commit on a
    /// partition, when it was not empty. A keyspace of its own, so that a
    /// checkpoint written before it existed loads unchanged.
    pub commit_metadata: Keyspace<CursorKey, String>,
    /// Records held one by one by a share group's members (`rows::ShareRow`);
    /// a row goes with its cursor.
    pub shares: Keyspace<CursorKey, ShareRow>,
    pub groups: Keyspace<(u64, String), GroupRow>,
    pub dlq: Keyspace<DlqKey, DlqRow>,
    pub kv: Keyspace<String, KvRow>,
    /// The cluster configuration, from the last membership entry applied
    /// (`MEMBERSHIP_ROW`); none on a node that never applied one.
    pub membership: Keyspace<String, MembershipRow>,
    /// Kafka transactional ids and their coordinator state
    /// (`planner/kafka_txn.rs`); changed only through `set_kafka_txn`.
    kafka_txns: Keyspace<String, KafkaTxnRow>,
    /// Derived at load and kept in step with `kafka_txns`: per partition,
    /// the producers whose open transaction wrote there, each with the
    /// first offset it wrote: the partition's last stable offset is the
    /// least of them.
    open_txns: HashMap<PartitionKey, BTreeMap<i64, u64>>,
    /// Aborted Kafka transactions per partition, by first offset.
    pub aborted_txns: Keyspace<(u64, u64, u64), AbortedTxnRow>,
    /// Offsets that hold no message for HTTP readers: Kafka transaction
    /// markers and aborted transactions' records, as (queue id, partition
    /// id, first offset) → how many follow.
    kafka_hidden: Keyspace<(u64, u64, u64), u32>,
    timers: Keyspace<String, TimerRow>,
    /// Derived at load and kept in step with `timers`: (due time, key).
    timers_due: BTreeSet<(i64, String)>,
    /// Derived at load and kept in step with `kv`: (expiry time, key) of
    /// every row with a TTL, for the sweep.
    kv_expiring: BTreeSet<(i64, String)>,
    /// Derived at load and kept in step with `cursors`: lease id → the
    /// cursors that lease holds (one pop may claim several partitions).
    leases: HashMap<String, Vec<CursorKey>>,
    /// Derived at load and kept in step by apply: queue id → name, and
    /// (queue id, partition name) → partition id.
    queue_names: HashMap<u64, String>,
    /// Derived from the queues' options and kept in step with them: what a
    /// push must know of its queue (bound, sealing), so no push parses
    /// options. Only queues with a non-default trait have an entry.
    traits: HashMap<u64, QueueTraits>,
    partition_ids: HashMap<(u64, String), u64>,
    /// Where every stored message sits in the qlog (RAM only).
    pub locator: Locator,
}

/// What a push must know of its queue, derived from its options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueTraits {
    /// `maxSize`; 0 for an unbounded queue.
    pub max_size: u64,
    /// `encryptionEnabled`.
    pub encrypted: bool,
    /// `priority`: a pop by namespace or task takes from higher ones first.
    pub priority: i64,
}

/// What the checkpointer writes: the rows changed since the last checkpoint
/// and the meta values at the applied index.
pub struct CheckpointJob {
    pub changes: Vec<Box<dyn EncodeChanges>>,
    pub meta: Vec<(&'static str, u64)>,
    pub applied: LogId,
}

impl Default for Store {
    fn default() -> Self {
        Self {
            applied: LogId::default(),
            applied_leader: 0,
            applied_us: 0,
            next_queue_id: 1,
            next_partition_id: 1,
            next_kv_version: 1,
            queues: Keyspace::new("queues"),
            partitions: Keyspace::new("partitions"),
            dedup: DedupIndex::default(),
            producers: Keyspace::new("producers"),
            cursors: Keyspace::new("cursors"),
            commit_metadata: Keyspace::new("commit_metadata"),
            shares: Keyspace::new("shares"),
            groups: Keyspace::new("groups"),
            dlq: Keyspace::new("dlq"),
            kv: Keyspace::new("kv"),
            membership: Keyspace::new("membership"),
            kafka_txns: Keyspace::new("kafka_txns"),
            open_txns: HashMap::new(),
            aborted_txns: Keyspace::new("aborted_txns"),
            kafka_hidden: Keyspace::new("kafka_hidden"),
            timers: Keyspace::new("timers"),
            timers_due: BTreeSet::new(),
            kv_expiring: BTreeSet::new(),
            leases: HashMap::new(),
            queue_names: HashMap::new(),
            traits: HashMap::new(),
            partition_ids: HashMap::new(),
            locator: Locator::default(),
        }
    }
}

impl CheckpointJob {
    pub fn rows(&self) -> usize {
        self.changes.iter().map(|c| c.rows()).sum()
    }
}

impl Store {
    /// The rows each keyspace holds in RAM, for `/metrics`: most grow with
    /// live state (queues, partitions, cursors, groups), the dedup rows and
    /// the locator's spans with the messages stored.
    pub fn row_counts(&self) -> Vec<(&'static str, usize)> {
        vec![
            (self.queues.name, self.queues.len()),
            (self.partitions.name, self.partitions.len()),
            (self.cursors.name, self.cursors.len()),
            (self.commit_metadata.name, self.commit_metadata.len()),
            (self.shares.name, self.shares.len()),
            (self.groups.name, self.groups.len()),
            (self.dlq.name, self.dlq.len()),
            (self.kv.name, self.kv.len()),
            (self.kafka_txns.name, self.kafka_txns.len()),
            (self.aborted_txns.name, self.aborted_txns.len()),
            (self.kafka_hidden.name, self.kafka_hidden.len()),
            (self.timers.name, self.timers.len()),
            (self.producers.name, self.producers.len()),
            (dedup::KEYSPACE, self.dedup.row_count()),
            ("locator_spans", self.locator.span_count()),
        ]
    }

    /// Builds the store from a verified checkpoint.
    pub fn from_rows(rows: LoadedRows, path: &Path) -> Result<Self, CheckpointError> {
        let mut store = Store::default();
        for (keyspace, rows) in rows {
            for (key, value) in rows {
                let loaded = match keyspace {
                    "queues" => store.queues.load_row(&key, &value),
                    "partitions" => store.partitions.load_row(&key, &value),
                    "dedup" => store.dedup.load_row(&key, &value),
                    "producers" => store.producers.load_row(&key, &value),
                    "cursors" => store.cursors.load_row(&key, &value),
                    "commit_metadata" => store.commit_metadata.load_row(&key, &value),
                    "shares" => store.shares.load_row(&key, &value),
                    "groups" => store.groups.load_row(&key, &value),
                    "dlq" => store.dlq.load_row(&key, &value),
                    "kv" => store.kv.load_row(&key, &value),
                    "membership" => store.membership.load_row(&key, &value),
                    "kafka_txns" => store.kafka_txns.load_row(&key, &value),
                    "aborted_txns" => store.aborted_txns.load_row(&key, &value),
                    "kafka_hidden" => store.kafka_hidden.load_row(&key, &value),
                    "timers" => store.timers.load_row(&key, &value),
                    "meta" => {
                        let v: u64 = crate::codec::from_bytes(&value).map_err(|e| e.to_string()).unwrap_or_default();
                        match key.as_slice() {
                            b"applied_term" => store.applied.term = v,
                            b"applied_index" => store.applied.index = v,
                            b"applied_leader" => store.applied_leader = v,
                            b"next_queue_id" => store.next_queue_id = v,
                            b"next_partition_id" => store.next_partition_id = v,
                            b"next_kv_version" => store.next_kv_version = v,
                            _ => {}
                        }
                        Ok(())
                    }
                    _ => unreachable!("the checkpoint knows only these keyspaces"),
                };
                loaded.map_err(|reason| CheckpointError::Undecodable { path: path.to_path_buf(), keyspace, reason })?;
            }
        }
        let queues: Vec<(String, u64, String)> =
            store.queues.iter().map(|(name, row)| (name.clone(), row.id, row.options.clone())).collect();
        for (name, id, options) in queues {
            store.queue_names.insert(id, name);
            store.set_traits(id, &options);
        }
        for ((q, p), row) in store.partitions.iter() {
            store.partition_ids.insert((*q, row.name.clone()), *p);
        }
        for (key, row) in store.timers.iter() {
            store.timers_due.insert((row.deliver_at_us, key.clone()));
        }
        for (key, row) in store.kv.iter() {
            if let Some(t) = row.expires_us {
                store.kv_expiring.insert((t, key.clone()));
            }
        }
        for (key, cursor) in store.cursors.iter() {
            if let Some(lease) = &cursor.lease {
                store.leases.entry(lease.id.clone()).or_default().push(key.clone());
            }
        }
        let txns: Vec<KafkaTxnRow> = store.kafka_txns.iter().map(|(_, row)| row.clone()).collect();
        for row in &txns {
            store.index_open_txn(row, true);
        }
        Ok(store)
    }

    pub fn queue_id(&self, name: &str) -> Option<u64> {
        self.queues.get(&name.to_string()).map(|r| r.id)
    }

    pub fn queue_name(&self, id: u64) -> Option<&str> {
        self.queue_names.get(&id).map(String::as_str)
    }

    /// The effect catalogue version the entries applied so far let a
    /// leader write: 1 until one raised it (`version_gate.rs`). Apply reads
    /// it too, so every node executes an entry as its planner meant.
    pub fn catalogue(&self) -> u32 {
        // Read for every Kafka batch planned and applied: no key is built.
        self.kv.get_borrowed(CATALOGUE_ROW).and_then(|r| r.value.parse().ok()).unwrap_or(1)
    }

    pub fn partition_id(&self, queue: u64, name: &str) -> Option<u64> {
        self.partition_ids.get(&(queue, name.to_string())).copied()
    }

    pub fn partition(&self, queue: u64, partition: u64) -> Option<&PartitionRow> {
        self.partitions.get(&(queue, partition))
    }

    pub fn insert_queue(&mut self, name: String, row: QueueRow) {
        self.queue_names.insert(row.id, name.clone());
        self.set_traits(row.id, &row.options);
        self.next_queue_id = self.next_queue_id.max(row.id + 1);
        self.queues.insert(name, row);
    }

    pub fn insert_partition(&mut self, queue: u64, id: u64, row: PartitionRow) {
        self.partition_ids.insert((queue, row.name.clone()), id);
        self.next_partition_id = self.next_partition_id.max(id + 1);
        self.partitions.insert((queue, id), row);
    }

    /// The cursors a lease holds.
    pub fn lease_holders(&self, lease_id: &str) -> &[CursorKey] {
        self.leases.get(lease_id).map_or(&[], Vec::as_slice)
    }

    /// Replaces a cursor, keeping the lease index in step.
    pub fn set_cursor(&mut self, key: CursorKey, row: CursorRow) {
        let old = self.cursors.get(&key).and_then(|c| c.lease.as_ref()).map(|l| l.id.clone());
        let new = row.lease.as_ref().map(|l| l.id.clone());
        if old != new {
            if let Some(old) = old {
                if let Some(holders) = self.leases.get_mut(&old) {
                    holders.retain(|k| *k != key);
                    if holders.is_empty() {
                        self.leases.remove(&old);
                    }
                }
            }
            if let Some(new) = new {
                self.leases.entry(new).or_default().push(key.clone());
            }
        }
        self.cursors.insert(key, row);
    }

    /// Removes a cursor with its lease, its held records and its commit metadata.
    fn remove_cursor(&mut self, key: &CursorKey) {
        self.set_cursor(key.clone(), CursorRow::default());
        self.cursors.remove(key);
        self.commit_metadata.remove(key);
        self.shares.remove(key);
    }

    /// Replaces a partition's share row; an empty one is no row.
    pub fn set_share(&mut self, key: CursorKey, row: ShareRow) {
        match row.held.is_empty() && row.retry_at.is_empty() {
            true => {
                self.shares.remove(&key);
            }
            false => self.shares.insert(key, row),
        }
    }

    /// Records a Kafka commit's metadata string; an empty one is no row.
    pub fn set_commit_metadata(&mut self, key: CursorKey, metadata: &str) {
        match metadata.is_empty() {
            true => {
                self.commit_metadata.remove(&key);
            }
            false => self.commit_metadata.insert(key, metadata.to_string()),
        }
    }

    pub fn timer(&self, key: &str) -> Option<&TimerRow> {
        self.timers.get(&key.to_string())
    }

    /// Timers whose keys start with `prefix`, after `after`, in key order.
    pub fn timers_from<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a String, &'a TimerRow)> + 'a {
        let start = after.map_or(prefix.to_string(), str::to_string);
        self.timers
            .range(start..)
            .skip_while(move |(k, _)| after.is_some_and(|a| k.as_str() == a))
            .take_while(move |(k, _)| k.starts_with(prefix))
    }

    /// Keys of timers due at `now_us`, earliest first.
    pub fn timers_due(&self, now_us: i64, max: usize) -> Vec<String> {
        self.timers_due.iter().take_while(|(t, _)| *t <= now_us).take(max).map(|(_, k)| k.clone()).collect()
    }

    pub fn set_timer(&mut self, key: String, row: TimerRow) {
        if let Some(old) = self.timers.get(&key) {
            self.timers_due.remove(&(old.deliver_at_us, key.clone()));
        }
        self.timers_due.insert((row.deliver_at_us, key.clone()));
        self.timers.insert(key, row);
    }

    /// Writes a KV row; the KV keyspace changes only through here and
    /// `remove_kv`, so the expiry index stays exact.
    pub fn put_kv(&mut self, key: String, row: KvRow) {
        if let Some(t) = self.kv.get(&key).and_then(|old| old.expires_us) {
            self.kv_expiring.remove(&(t, key.clone()));
        }
        if let Some(t) = row.expires_us {
            self.kv_expiring.insert((t, key.clone()));
        }
        self.kv.insert(key, row);
    }

    pub fn remove_kv(&mut self, key: &str) {
        if let Some(t) = self.kv.remove(&key.to_string()).and_then(|old| old.expires_us) {
            self.kv_expiring.remove(&(t, key.to_string()));
        }
    }

    /// Keys of KV rows expired at `now_us`, earliest first.
    pub fn kv_expired(&self, now_us: i64, max: usize) -> Vec<String> {
        self.kv_expiring.iter().take_while(|(t, _)| *t <= now_us).take(max).map(|(_, k)| k.clone()).collect()
    }

    pub fn remove_timer(&mut self, key: &str) {
        if let Some(old) = self.timers.remove(&key.to_string()) {
            self.timers_due.remove(&(old.deliver_at_us, key.to_string()));
        }
    }

    /// The coordinator state of a Kafka transactional id.
    pub fn kafka_txn(&self, transactional_id: &str) -> Option<&KafkaTxnRow> {
        self.kafka_txns.get(&transactional_id.to_string())
    }

    /// Every Kafka transactional id with its state, in id order.
    pub fn kafka_txns(&self) -> impl Iterator<Item = (&String, &KafkaTxnRow)> {
        self.kafka_txns.iter()
    }

    /// Writes a transactional id's state, keeping the open-transaction
    /// index (and so every partition's last stable offset) in step.
    pub fn set_kafka_txn(&mut self, transactional_id: String, row: KafkaTxnRow) {
        if let Some(old) = self.kafka_txns.get(&transactional_id).cloned() {
            self.index_open_txn(&old, false);
        }
        self.index_open_txn(&row, true);
        self.kafka_txns.insert(transactional_id, row);
    }

    fn index_open_txn(&mut self, row: &KafkaTxnRow, add: bool) {
        if row.state != KafkaTxnState::Ongoing {
            return;
        }
        for (key, spans) in &row.partitions {
            let Some((first, _)) = spans.first() else { continue };
            match add {
                true => {
                    self.open_txns.entry(*key).or_default().insert(row.producer_id, *first);
                }
                false => {
                    if let Some(open) = self.open_txns.get_mut(key) {
                        open.remove(&row.producer_id);
                        if open.is_empty() {
                            self.open_txns.remove(key);
                        }
                    }
                }
            }
        }
    }

    /// The partition's last stable offset: the first offset of its oldest
    /// open Kafka transaction, else its high watermark. A read_committed
    /// consumer reads below it only.
    pub fn last_stable_offset(&self, queue: u64, partition: u64) -> u64 {
        let end = self.partition(queue, partition).map_or(0, |r| r.next_offset);
        let oldest = self.open_txns.get(&(queue, partition)).and_then(|open| open.values().min().copied());
        oldest.map_or(end, |first| first.min(end))
    }

    /// The aborted transactions of a partition whose stretch reaches `from`
    /// or later and begins before `to`: (producer id, first offset), by
    /// first offset.
    pub fn aborted_between(&self, queue: u64, partition: u64, from: u64, to: u64) -> Vec<(i64, u64)> {
        self.aborted_txns
            .range((queue, partition, 0)..(queue, partition, to))
            .filter(|(_, row)| row.last_offset >= from)
            .map(|((_, _, first), row)| (row.producer_id, *first))
            .collect()
    }

    /// Forgets a consumer group on a queue: its cursors (leases included)
    /// and, with `metadata`, its subscription.
    pub fn remove_group(&mut self, queue: u64, group: &str, metadata: bool) {
        let keys: Vec<CursorKey> =
            self.cursors.iter().filter(|(k, _)| k.0 == queue && k.2 == group).map(|(k, _)| k.clone()).collect();
        for key in keys {
            self.remove_cursor(&key);
        }
        if metadata {
            self.groups.remove(&(queue, group.to_string()));
        }
    }

    /// Moves a partition's retention watermarks forward (never back, never
    /// past its end, `txns_start` never past `log_start`), and forgets the
    /// dedup rows and locator spans below `txns_start`.
    pub fn retain(&mut self, queue: u64, partition: u64, log_start: u64, txns_start: u64) {
        let mut kept = None;
        self.partitions.update(&(queue, partition), |row| {
            row.log_start = row.log_start.max(log_start.min(row.next_offset));
            row.txns_start = row.txns_start.max(txns_start.min(row.log_start));
            kept = Some(row.txns_start);
        });
        if let Some(txns_start) = kept {
            self.dedup.remove_below(queue, partition, txns_start);
            self.locator.remove_below(queue, partition, txns_start);
            self.remove_aborted_txns(queue, partition, |row| row.last_offset < txns_start);
            self.remove_hidden(queue, partition, txns_start);
        }
    }

    /// The first offset still held (at or above `log_start`) that was stored
    /// at or after `timestamp_us`, if any.
    pub fn first_kept_at_or_after(&self, queue: u64, partition: u64, timestamp_us: i64) -> Option<u64> {
        let log_start = self.partition(queue, partition)?.log_start;
        self.locator.first_at_or_after(queue, partition, timestamp_us).map(|o| o.max(log_start))
    }

    /// Every group's cursor on one partition.
    pub fn partition_cursors(&self, queue: u64, partition: u64) -> impl Iterator<Item = (&CursorKey, &CursorRow)> {
        self.cursors.range((queue, partition, String::new())..(queue, partition + 1, String::new()))
    }

    fn set_traits(&mut self, queue: u64, options: &str) {
        let parsed = QueueOptions::parse(options);
        let traits = QueueTraits {
            max_size: parsed.max_size(),
            encrypted: parsed.encryption_enabled(),
            priority: parsed.priority(),
        };
        if traits == QueueTraits::default() {
            self.traits.remove(&queue);
        } else {
            self.traits.insert(queue, traits);
        }
    }

    /// The queue's bound, sealing and priority; the defaults for an unknown
    /// queue.
    pub fn traits(&self, queue: u64) -> QueueTraits {
        self.traits.get(&queue).copied().unwrap_or_default()
    }

    /// Removes a queue and every row that belongs to it. Its messages stay in
    /// the qlog until reclaim frees their files.
    pub fn remove_queue(&mut self, id: u64) {
        self.traits.remove(&id);
        let Some(name) = self.queue_names.remove(&id) else {
            return;
        };
        self.queues.remove(&name);
        let partitions: Vec<PartitionKey> = self.partitions.range((id, 0)..=(id, u64::MAX)).map(|(k, _)| *k).collect();
        for (queue, partition) in partitions {
            self.remove_partition(queue, partition);
        }
        // Cursors and dead letters of partitions the queue no longer has.
        self.remove_cursors_and_dead_letters((id, 0), (id + 1, 0));
        let groups: Vec<(u64, String)> =
            self.groups.range((id, String::new())..(id + 1, String::new())).map(|(k, _)| k.clone()).collect();
        for key in groups {
            self.groups.remove(&key);
        }
    }

    /// Removes a partition with everything kept of it: its locator spans,
    /// dedup rows, cursors (and their leases) and dead letters.
    pub fn remove_partition(&mut self, queue: u64, partition: u64) {
        if let Some(row) = self.partitions.remove(&(queue, partition)) {
            self.partition_ids.remove(&(queue, row.name));
        }
        self.locator.remove(queue, partition);
        self.dedup.remove_partition(queue, partition);
        let producers: Vec<ProducerKey> =
            self.producers.range((queue, partition, 0)..=(queue, partition, u64::MAX)).map(|(k, _)| *k).collect();
        for key in producers {
            self.producers.remove(&key);
        }
        self.remove_aborted_txns(queue, partition, |_| true);
        self.remove_hidden(queue, partition, u64::MAX);
        self.remove_cursors_and_dead_letters((queue, partition), (queue, partition + 1));
    }

    /// Marks stretches of a partition as holding no message for HTTP readers.
    pub fn hide_offsets(&mut self, queue: u64, partition: u64, spans: &[(u64, u32)]) {
        for (first, count) in spans {
            self.kafka_hidden.insert((queue, partition, *first), *count);
        }
    }

    /// Whether `offset` of the partition is a transaction marker or an
    /// aborted transaction's record: no message for an HTTP reader.
    pub fn is_kafka_hidden(&self, queue: u64, partition: u64, offset: u64) -> bool {
        let last = self.kafka_hidden.range((queue, partition, 0)..=(queue, partition, offset)).next_back();
        last.is_some_and(|((_, _, first), count)| offset < first + u64::from(*count))
    }

    /// Forgets the partition's aborted transactions that `gone` picks.
    fn remove_aborted_txns(&mut self, queue: u64, partition: u64, gone: impl Fn(&AbortedTxnRow) -> bool) {
        let keys: Vec<(u64, u64, u64)> = self
            .aborted_txns
            .range((queue, partition, 0)..=(queue, partition, u64::MAX))
            .filter(|(_, row)| gone(row))
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.aborted_txns.remove(&key);
        }
    }

    /// Forgets the partition's hidden stretches that end below `below`.
    fn remove_hidden(&mut self, queue: u64, partition: u64, below: u64) {
        let keys: Vec<(u64, u64, u64)> = self
            .kafka_hidden
            .range((queue, partition, 0)..=(queue, partition, u64::MAX))
            .filter(|((_, _, first), count)| first.saturating_add(u64::from(**count)) <= below)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.kafka_hidden.remove(&key);
        }
    }

    /// The cursors and dead letters of the partitions from `from` up to,
    /// not including, `to`.
    fn remove_cursors_and_dead_letters(&mut self, from: PartitionKey, to: PartitionKey) {
        let cursors: Vec<CursorKey> = self
            .cursors
            .range((from.0, from.1, String::new())..(to.0, to.1, String::new()))
            .map(|(k, _)| k.clone())
            .collect();
        for key in cursors {
            self.remove_cursor(&key);
        }
        let dlq: Vec<DlqKey> = self
            .dlq
            .range((from.0, from.1, String::new(), 0)..(to.0, to.1, String::new(), 0))
            .map(|(k, _)| k.clone())
            .collect();
        for key in dlq {
            self.dlq.remove(&key);
        }
    }

    /// Takes everything changed since the last checkpoint, at the applied
    /// index: the rows are copied, and encoded later off the store lock.
    pub fn checkpoint_job(&mut self) -> CheckpointJob {
        let changes: Vec<Box<dyn EncodeChanges>> = vec![
            Box::new(self.queues.take_changes()),
            Box::new(self.partitions.take_changes()),
            Box::new(self.dedup.take_changes()),
            Box::new(self.producers.take_changes()),
            Box::new(self.cursors.take_changes()),
            Box::new(self.commit_metadata.take_changes()),
            Box::new(self.shares.take_changes()),
            Box::new(self.groups.take_changes()),
            Box::new(self.dlq.take_changes()),
            Box::new(self.kv.take_changes()),
            Box::new(self.timers.take_changes()),
            Box::new(self.membership.take_changes()),
            Box::new(self.kafka_txns.take_changes()),
            Box::new(self.aborted_txns.take_changes()),
            Box::new(self.kafka_hidden.take_changes()),
        ];
        CheckpointJob {
            changes,
            meta: vec![
                ("applied_term", self.applied.term),
                ("applied_index", self.applied.index),
                ("applied_leader", self.applied_leader),
                ("next_queue_id", self.next_queue_id),
                ("next_partition_id", self.next_partition_id),
                ("next_kv_version", self.next_kv_version),
            ],
            applied: self.applied,
        }
    }
}
