//! Acks of Kafka records, resolved to their place. From effect catalogue 5
//! a Kafka record has no dedup row (its producer's state deduplicates it),
//! so the planner cannot find it by the transactionId a pop showed. Before
//! an ack is proposed, one whose id has no row is looked for among the
//! messages its lease holds in the partition, and named by its place
//! (`kafka_batch::place_id`), which the planner reads as the offset.

use crate::node::Node;
use crate::planner::command::AckItem;
use crate::qlog::kafka_batch::place_id;
use std::collections::BTreeMap;

/// Renames, in place, every ack of `items` whose transactionId has no
/// dedup row but names a message its lease holds. Items that match nothing
/// are left as they came: the planner refuses them as before.
pub fn resolve(node: &Node, items: &mut [AckItem]) {
    // Per (queue, partition, group, lease): the offsets the lease holds.
    let mut wanted: BTreeMap<(u64, u64, String, Option<String>), Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let store = node.group_of_id(item.queue_id).view.local();
        let hash = crate::message::transaction_hash(&item.transaction_id);
        if store.dedup.get(item.queue_id, item.partition_id, &hash).is_none() {
            let key = (item.queue_id, item.partition_id, item.group.clone(), item.lease_id.clone());
            wanted.entry(key).or_default().push(i);
        }
    }
    for ((queue, partition, group, lease), at) in wanted {
        let core = node.group_of_id(queue);
        let offsets = held_offsets(&core.view.local(), (queue, partition, group), lease.as_deref());
        let Ok(messages) = core.reader.read_offsets(queue, partition, &offsets) else { continue };
        for i in at {
            let found = messages.iter().find(|m| m.message.transaction_id == items[i].transaction_id);
            if let Some(m) = found {
                items[i].transaction_id = place_id(m.offset);
            }
        }
    }
}

/// The offsets a lease holds in a partition: the group's lease range, or
/// the records its share row holds for the lease.
fn held_offsets(store: &crate::store::Store, key: crate::store::CursorKey, lease: Option<&str>) -> Vec<u64> {
    /// A lease never covers more; a range past it is not read whole.
    const MOST: u64 = 100_000;
    let mut offsets: Vec<u64> = match store.cursors.get(&key).and_then(|c| c.lease.as_ref()) {
        Some(l) if lease.is_none_or(|id| id == l.id) => (l.first..=l.last.min(l.first + MOST)).collect(),
        _ => Vec::new(),
    };
    if let Some(share) = store.shares.get(&key) {
        let held = share.held.iter().filter(|(_, h)| lease.is_none_or(|id| id == h.holder)).map(|(o, _)| *o);
        offsets.extend(held);
    }
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}
