//! Apply: executes an entry's effects on the store. It never decides, and it
//! skips any entry at or below the applied index, so replaying twice changes
//! nothing.

use super::effect::{Effect, Entry};
use crate::qlog::files::Location;
use crate::store::locator::Span;
use crate::store::rows::{DedupRow, PartitionRow, QueueRow};
use crate::store::Store;

/// Applies `entry`, whose message records sit at `locations` (one per
/// message record). Answers false when the entry was already applied.
pub fn apply(store: &mut Store, entry: &Entry, locations: &[Location]) -> bool {
    if entry.id.index <= store.applied.index {
        return false;
    }
    let ts = entry.body.timestamp_us;
    for effect in &entry.body.effects {
        match effect {
            Effect::CreateQueue { id, name } => store.insert_queue(name.clone(), QueueRow { id: *id, created_us: ts }),
            Effect::CreatePartition { queue, id, name } => store.insert_partition(
                *queue,
                *id,
                PartitionRow { name: name.clone(), next_offset: 0, log_start: 0, created_us: ts, last_write_us: ts },
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
                for (k, hash) in record.hashes.iter().enumerate() {
                    store.dedup.insert((*queue, *partition, *hash), DedupRow { offset: first_offset + k as u64 });
                }
                store.locator.insert(
                    *queue,
                    *partition,
                    Span { first_offset: *first_offset, count: *count, at: locations[i] },
                );
            }
        }
    }
    store.applied = entry.id;
    true
}
