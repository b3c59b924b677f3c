//! Apply: executes an entry's effects on the store. It never decides, and it
//! skips any entry at or below the applied index, so replaying twice changes
//! nothing.

use super::effect::{Effect, Entry};
use super::{cursor, held};
use crate::qlog::files::Location;
use crate::qlog::message_record::Piece;
use crate::queue_options;
use crate::store::locator::Span;
use crate::store::rows::{
    AbortedTxnRow, CursorRow, DlqRow, GroupRow, MembershipRow, PartitionRow, ProducerBatch, ProducerRow, QueueRow,
    FORGOTTEN,
};
use crate::store::{CursorKey, Store, MEMBERSHIP_ROW};

/// Applies `entry`, whose message records sit at `locations` (one per
/// message record). Answers false when the entry was already applied.
pub fn apply(store: &mut Store, entry: &Entry, locations: &[Location]) -> bool {
    if !begin(store, entry, locations) {
        return false;
    }
    for effect in &entry.body.effects {
        apply_effect(store, entry, effect, locations);
    }
    finish(store, entry);
    true
}

/// Checks that `entry` is the next to apply; false when it was already
/// applied. Apply is `begin`, `apply_effect` for each effect in order, and
/// `finish`: a cluster's guarded apply (`replicate/raft/apply_guard.rs`)
/// runs the steps itself, to name the effect that failed.
pub fn begin(store: &Store, entry: &Entry, locations: &[Location]) -> bool {
    if entry.id.index <= store.applied.index {
        return false;
    }
    assert_eq!(
        entry.id.index,
        store.applied.index + 1,
        "invariant broken: entry {} applied after entry {}: apply runs in index order with no gap",
        entry.id,
        store.applied
    );
    assert_eq!(
        locations.len(),
        entry.messages.len(),
        "invariant broken: entry {} applied with {} locations for its {} message records",
        entry.id,
        locations.len(),
        entry.messages.len()
    );
    true
}

/// Executes one effect of `entry`.
pub fn apply_effect(store: &mut Store, entry: &Entry, effect: &Effect, locations: &[Location]) {
    let ts = entry.body.timestamp_us;
    match effect {
        Effect::CreateQueue { id, name } => store.insert_queue(
            name.clone(),
            QueueRow {
                id: *id,
                created_us: ts,
                namespace: None,
                task: None,
                options: serde_json::Value::Object(queue_options::defaults()).to_string(),
            },
        ),
        Effect::ConfigureQueue { id, name, namespace, task, options } => {
            let created_us = store.queues.get(name).map_or(ts, |r| r.created_us);
            let row = QueueRow {
                id: *id,
                created_us,
                namespace: namespace.clone(),
                task: task.clone(),
                options: options.clone(),
            };
            store.insert_queue(name.clone(), row);
        }
        Effect::DeleteQueue { id } => store.remove_queue(*id),
        Effect::Subscribe { queue, group, from_us, conflate } => {
            let row = GroupRow { from_us: *from_us, created_us: ts, conflate: *conflate };
            store.groups.insert((*queue, group.clone()), row)
        }
        Effect::Deliver { queue, partition, group, start, .. } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            let mut row =
                store.cursors.get(&key).cloned().unwrap_or(CursorRow { committed: *start, ..Default::default() });
            cursor::apply(&mut row, effect);
            store.set_cursor(key, row);
        }
        Effect::DeadLetter { queue, partition, group, offset, error, failures } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            let mut row = store.cursors.get(&key).cloned().unwrap_or_default();
            let failures = *failures;
            cursor::apply(&mut row, effect);
            store.set_cursor(key.clone(), row);
            move_share(store, key, effect);
            let dlq = DlqRow { error: error.clone(), failures, moved_us: ts };
            store.dlq.insert((*queue, *partition, group.clone(), *offset), dlq);
        }
        Effect::Redeliver { queue, partition, group, offset } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            let mut row = store.cursors.get(&key).cloned().unwrap_or_default();
            cursor::apply(&mut row, effect);
            store.set_cursor(key, row);
            store.dlq.remove(&(*queue, *partition, group.clone(), *offset));
        }
        Effect::Seek { queue, partition, group, offset } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            store.set_cursor(key.clone(), CursorRow { committed: *offset, ..Default::default() });
            move_share(store, key, effect);
        }
        Effect::Acquire { queue, partition, group, start, .. } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            if store.cursors.get(&key).is_none() {
                store.set_cursor(key.clone(), CursorRow { committed: *start, ..Default::default() });
            }
            let mut row = store.shares.get(&key).cloned().unwrap_or_default();
            held::apply(&mut row, effect);
            store.set_share(key, row);
        }
        Effect::Release { queue, partition, group, .. } | Effect::Renew { queue, partition, group, .. } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            let mut row = store.cursors.get(&key).cloned().unwrap_or_default();
            cursor::apply(&mut row, effect);
            store.set_cursor(key.clone(), row);
            move_share(store, key, effect);
        }
        Effect::CommitMetadata { queue, partition, group, metadata } => {
            store.set_commit_metadata((*queue, *partition, group.clone()), metadata)
        }
        Effect::DeleteGroup { queue, group, metadata } => store.remove_group(*queue, group, *metadata),
        Effect::KvPut { key, row } => {
            store.next_kv_version = store.next_kv_version.max(row.version + 1);
            store.put_kv(key.clone(), row.clone());
        }
        Effect::KvDelete { key } => store.remove_kv(key),
        Effect::Membership(membership) => {
            let row = MembershipRow { log_id: entry.id, leader: entry.leader, membership: membership.clone() };
            store.membership.insert(MEMBERSHIP_ROW.to_string(), row);
        }
        Effect::KafkaTxn { transactional_id, row } => store.set_kafka_txn(transactional_id.clone(), row.clone()),
        Effect::AbortedTxn { queue, partition, producer_id, first_offset, last_offset } => {
            let row = AbortedTxnRow { producer_id: *producer_id, last_offset: *last_offset };
            store.aborted_txns.insert((*queue, *partition, *first_offset), row);
        }
        Effect::HideOffsets { queue, partition, spans } => store.hide_offsets(*queue, *partition, spans),
        Effect::TimerSet { key, row } => store.set_timer(key.clone(), row.clone()),
        Effect::TimerDelete { key } => store.remove_timer(key),
        Effect::Ack { queue, partition, group, .. } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            let mut row = store.cursors.get(&key).cloned().unwrap_or_default();
            cursor::apply(&mut row, effect);
            store.set_cursor(key.clone(), row);
            move_share(store, key, effect);
        }
        Effect::Fail { queue, partition, group, .. }
        | Effect::ExtendLease { queue, partition, group, .. }
        | Effect::LeaseExpired { queue, partition, group } => {
            let key: CursorKey = (*queue, *partition, group.clone());
            let mut row = store.cursors.get(&key).cloned().unwrap_or_default();
            cursor::apply(&mut row, effect);
            store.set_cursor(key, row);
        }
        Effect::CreatePartition { queue, id, name } => store.insert_partition(
            *queue,
            *id,
            PartitionRow {
                name: name.clone(),
                next_offset: 0,
                log_start: 0,
                txns_start: 0,
                created_us: ts,
                last_write_us: ts,
            },
        ),
        Effect::Append { queue, partition, first_offset, count } => {
            let end = first_offset + *count as u64;
            let found = store.partitions.update(&(*queue, *partition), |p| {
                assert_eq!(p.next_offset, *first_offset, "an append lands exactly at the partition's end");
                p.next_offset = end;
                p.last_write_us = ts;
            });
            assert!(found, "an append names a partition its entry or an earlier one created");
            let (i, record) = entry
                .messages
                .iter()
                .enumerate()
                .find(|(_, m)| {
                    m.span.queue == *queue && m.span.partition == *partition && m.span.first_offset == *first_offset
                })
                .expect("every append has its message record");
            // From catalogue 5 a Kafka record has no dedup row: its
            // producer's state deduplicates it (`ProducerBatch`).
            let kafka_rows = store.catalogue() < 5;
            let mut at = 0;
            for piece in &record.pieces {
                let count = piece.count() as usize;
                if kafka_rows || matches!(piece, Piece::Message(_)) {
                    for (k, hash) in record.hashes[at..at + count].iter().enumerate() {
                        store.dedup.insert(*queue, *partition, *hash, first_offset + (at + k) as u64);
                    }
                }
                at += count;
            }
            store.locator.insert(
                *queue,
                *partition,
                Span { first_offset: *first_offset, count: *count, timestamp_us: ts, at: locations[i] },
            );
        }
        Effect::Retain { queue, partition, log_start, txns_start } => {
            store.retain(*queue, *partition, *log_start, *txns_start);
            let behind: Vec<CursorKey> = store
                .partition_cursors(*queue, *partition)
                .filter(|(_, c)| c.committed < *log_start)
                .map(|(k, _)| k.clone())
                .collect();
            for key in behind {
                let mut row = store.cursors.get(&key).cloned().expect("listed above");
                cursor::apply(&mut row, effect);
                store.set_cursor(key.clone(), row);
                move_share(store, key, effect);
            }
        }
        Effect::DeletePartition { queue, partition } => store.remove_partition(*queue, *partition),
        Effect::ProducerBatch { queue, partition, producer_id, epoch, first_seq, last_seq, first_offset } => {
            let key = (*queue, *partition, *producer_id);
            let mut row = store.producers.get(&key).cloned().unwrap_or_default();
            let batch = ProducerBatch { first_seq: *first_seq, last_seq: *last_seq, first_offset: *first_offset };
            row.record(*epoch, batch, ts);
            store.producers.insert(key, row);
        }
        Effect::ForgetProducers { queue, partition, producer_ids } => {
            for id in producer_ids {
                store.producers.remove(&(*queue, *partition, *id));
            }
            let forgotten = ProducerRow { last_write_us: ts, ..Default::default() };
            store.producers.insert((*queue, *partition, FORGOTTEN), forgotten);
        }
        Effect::ForgetDedup { queue, partition, below } => {
            store.dedup.remove_below(*queue, *partition, *below);
            // Rows of idempotent producers' records written before catalogue
            // 5 may be among them: a producer they alone knew is taken at
            // any sequence from now on, as one forgotten.
            let forgotten = ProducerRow { last_write_us: ts, ..Default::default() };
            store.producers.insert((*queue, *partition, FORGOTTEN), forgotten);
        }
    }
}

/// Moves the share row of `key` by `effect`, if the group's members hold
/// records there or wait out retry delays.
fn move_share(store: &mut Store, key: CursorKey, effect: &Effect) {
    if let Some(mut row) = store.shares.get(&key).cloned() {
        held::apply(&mut row, effect);
        store.set_share(key, row);
    }
}

/// Records `entry` as applied, once its effects are.
pub fn finish(store: &mut Store, entry: &Entry) {
    let ts = entry.body.timestamp_us;
    store.applied = entry.id;
    store.applied_leader = entry.leader;
    // Blank and membership entries carry no time of their own (raft
    // writes them): time as the store knows it never goes back.
    store.applied_us = store.applied_us.max(ts);
}
