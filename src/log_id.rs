//! The raft log id every entry carries from the start, so the qlog can serve
//! as openraft's log storage. Records name their entry by (term, index); the
//! entry record also names the node that led in that term, which with the
//! term is openraft's leader id. The local replicator writes every entry in
//! term 1 as node 1.

use serde::{Deserialize, Serialize};

/// The node id a single node leads as, and the leader that entries written
/// before leader ids were recorded (format 3) are read as: only the local
/// replicator wrote those.
pub const SINGLE_NODE: u64 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct LogId {
    pub term: u64,
    pub index: u64,
}

impl LogId {
    pub fn new(term: u64, index: u64) -> Self {
        Self { term, index }
    }

    /// The `ordinal`-th id an entry gives out (a lease, a timer's message),
    /// as a UUID derived from the entry's log id: every node that applies
    /// the entry, and every replay of it, names the same thing the same way,
    /// where a random id would differ. The term's low 16 bits and the ordinal
    /// take the first six bytes and the index's low 56 bits the last seven,
    /// around the version and variant bits of a version 8 UUID.
    pub fn derived_uuid(&self, ordinal: u32) -> String {
        self.derived_uuid_in(0, ordinal)
    }

    /// [`LogId::derived_uuid`] for an entry of raft group `group`, which
    /// takes byte 7 (0 for group 0, so its ids are as they always were):
    /// groups' logs reach the same log ids, and a lease or streams query
    /// id must name one group's (`derived_group`).
    pub fn derived_uuid_in(&self, group: u32, ordinal: u32) -> String {
        let mut bytes = [0u8; 16];
        bytes[..2].copy_from_slice(&(self.term as u16).to_be_bytes());
        bytes[2..6].copy_from_slice(&ordinal.to_be_bytes());
        bytes[7] = u8::try_from(group).expect("at most 64 raft groups (founding::MAX_GROUPS)");
        bytes[9..].copy_from_slice(&self.index.to_be_bytes()[1..]);
        uuid::Uuid::new_v8(bytes).to_string()
    }
}

/// The raft group whose entry derived `id` (`LogId::derived_uuid_in`);
/// `None` for text that is no such id.
pub fn derived_group(id: &str) -> Option<u32> {
    let id = uuid::Uuid::parse_str(id).ok()?;
    (id.get_version_num() == 8).then(|| u32::from(id.as_bytes()[7]))
}

impl std::fmt::Display for LogId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.term, self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::{derived_group, LogId};

    #[test]
    fn derived_ids_are_uuids_that_differ_by_entry_and_ordinal() {
        let a = LogId::new(1, 5).derived_uuid(0);
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 8);
        assert_eq!(a, LogId::new(1, 5).derived_uuid(0), "the same entry names the same id");
        assert_ne!(a, LogId::new(1, 6).derived_uuid(0));
        assert_ne!(a, LogId::new(2, 5).derived_uuid(0));
        assert_ne!(a, LogId::new(1, 5).derived_uuid(1));
        assert_eq!(derived_group(&a), Some(0));
        let in_group = LogId::new(1, 5).derived_uuid_in(3, 0);
        assert_ne!(a, in_group, "two groups' entries at one log id name different ids");
        assert_eq!(derived_group(&in_group), Some(3));
        assert_eq!(derived_group("not-an-id"), None);
    }
}
