//! Planning the Kafka-shaped operations: a queue created with a number of
//! partitions (a topic), grown, and consumer-group cursors placed by offset
//! commits. Partitions made here are named by their index ("0", "1", ...),
//! which is also their Kafka partition number.

use super::effect::Effect;
use super::items::{ConfigureQueue, CursorCommit};
use super::overlay::Overlay;
use super::queues;
use crate::store::Store;
use serde_json::{Map, Value};

/// Creates the queue, configured with `options` when any are given, and
/// its partitions, in one entry.
pub fn plan_create(
    store: &Store,
    overlay: &mut Overlay,
    queue: &str,
    partitions: u32,
    options: Map<String, Value>,
) -> Vec<Effect> {
    let mut effects = if options.is_empty() {
        let id = overlay.create_queue(store, queue);
        vec![Effect::CreateQueue { id, name: queue.to_string() }]
    } else {
        let configure = ConfigureQueue { queue: queue.to_string(), namespace: None, task: None, options };
        queues::plan_configure(store, overlay, &configure).0
    };
    effects.extend(plan_grow(store, overlay, queue, partitions));
    effects
}

/// Adds partitions until the queue has `total`; names already taken (by an
/// HTTP push to a partition named like a number) are skipped.
pub fn plan_grow(store: &Store, overlay: &mut Overlay, queue: &str, total: u32) -> Vec<Effect> {
    let Some(q) = overlay.queue_id(store, queue) else { return vec![] };
    let mut effects = Vec::new();
    let mut index = overlay.partition_count(store, q) as u64;
    let mut name_seq = index;
    while index < total as u64 {
        let name = name_seq.to_string();
        name_seq += 1;
        if overlay.partition_id(store, q, &name).is_some() {
            continue;
        }
        let id = overlay.create_partition(store, q, &name);
        effects.push(Effect::CreatePartition { queue: q, id, name });
        index += 1;
    }
    effects
}

/// Moves each group cursor to its committed offset; a cursor already there
/// keeps its lease and failures. The commit's metadata is recorded when it
/// differs from what the store holds (a repeat of an unapplied one is
/// harmless).
pub fn plan_commits(store: &Store, overlay: &mut Overlay, commits: Vec<CursorCommit>) -> Vec<Effect> {
    let mut effects = Vec::new();
    for c in commits {
        if !overlay.partition_exists(store, c.queue, c.partition) {
            continue;
        }
        let key = (c.queue, c.partition, c.group.clone());
        // Retention took everything below the log start: a cursor never points there.
        let offset = c.offset.max(overlay.log_start(store, c.queue, c.partition));
        if overlay.cursor(store, &key).is_none_or(|row| row.committed != offset) {
            overlay.place_cursor(store, key.clone(), offset);
            effects.push(Effect::Seek { queue: c.queue, partition: c.partition, group: c.group.clone(), offset });
        }
        if store.commit_metadata.get(&key).map_or("", String::as_str) != c.metadata {
            let (queue, partition, group, metadata) = (c.queue, c.partition, c.group, c.metadata);
            effects.push(Effect::CommitMetadata { queue, partition, group, metadata });
        }
    }
    effects
}
