//! Which raft group holds a queue. With one group, group 0 holds every
//! queue. With several, group 0 holds what touches no queue's data (KV,
//! locks, ephemeral declarations, membership, the Kafka coordinators'
//! producer ids and group state) and each queue, whole, lives in one data
//! group, `1 + xxh3(name) % (N - 1)`: its partitions, options, cursors,
//! leases, dead letters and timers together, so every command about one
//! queue is planned and applied in one group, as it is on one node.
//!
//! Each group numbers the queues and partitions it creates from its own
//! floor, `g << ID_BITS`, so an id (the HTTP `partitionId` an ack carries, a
//! Kafka topic id) is unique across the groups and names its group.

use xxhash_rust::xxh3::xxh3_64;

/// The low bits a group numbers its queues and partitions in: 16M each per
/// group, and with at most 64 groups (`founding::MAX_GROUPS`) every id still
/// fits the 32 bits a framed pop answer packs it in.
const ID_BITS: u32 = 24;

/// The group that holds the queue `name` in a cluster of `groups` groups.
pub fn group_of_queue(name: &str, groups: u32) -> u32 {
    match groups {
        0 | 1 => 0,
        n => 1 + (xxh3_64(name.as_bytes()) % u64::from(n - 1)) as u32,
    }
}

/// The group that created the queue (or partition) numbered `id`.
pub fn group_of_id(id: u64, groups: u32) -> u32 {
    match groups {
        0 | 1 => 0,
        // An id past every group's range was never given: group 0 holds
        // no queue, so asking there finds nothing, as it should.
        n => u32::try_from(id >> ID_BITS).ok().filter(|g| *g < n).unwrap_or(0),
    }
}

/// The least queue or partition id group `g` gives: 0 for group 0, whose
/// numbering is the one a single group has always had.
pub fn id_floor(g: u32) -> u64 {
    u64::from(g) << ID_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_group_holds_every_queue_and_id() {
        assert_eq!(group_of_queue("orders", 1), 0);
        assert_eq!(group_of_id(5 << ID_BITS, 1), 0);
        assert_eq!(id_floor(0), 0);
    }

    #[test]
    fn several_groups_keep_queues_out_of_group_0_and_ids_name_their_group() {
        let placed: std::collections::BTreeSet<u32> = (0..200).map(|i| group_of_queue(&format!("q{i}"), 4)).collect();
        assert_eq!(placed, [1, 2, 3].into_iter().collect(), "every data group gets queues, group 0 none");
        for g in 0..64 {
            assert_eq!(group_of_id(id_floor(g) + 1, 64), g);
            assert!(id_floor(g) + (1 << ID_BITS) - 1 <= u64::from(u32::MAX), "group {g}'s ids fit 32 bits");
        }
        assert_eq!(group_of_id(1 << 40, 4), 0, "an id no group gave reads as group 0's");
    }
}
