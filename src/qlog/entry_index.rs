//! Where each entry's records sit in the qlog, by log index: its entry
//! record, its stubs and its message records. The log store reads an entry
//! back by its index through it, and cuts the logs after an index with it.
//!
//! It holds the entries above the purge watermark only: below it, the store
//! checkpoint holds their effects, reclaim may rewrite or free their files,
//! and nothing reads them as entries again (a raft follower that needs them
//! gets a snapshot instead). So it is as large as what a restart would
//! replay, not as the qlog.

use super::files::Location;
use crate::log_id::LogId;
use std::collections::VecDeque;

/// One entry's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryLocations {
    pub id: LogId,
    /// The node that led in `id.term`: with the id, openraft's log id.
    pub leader: u64,
    /// The whole entry record, in the lowest log the entry touches.
    pub entry: Location,
    /// The stubs in the other logs it touches.
    pub stubs: Vec<Location>,
    /// Its message records, in the order of its `Append` effects.
    pub messages: Vec<Location>,
}

impl EntryLocations {
    /// Every record of the entry.
    pub fn all(&self) -> impl Iterator<Item = &Location> {
        std::iter::once(&self.entry).chain(&self.stubs).chain(&self.messages)
    }
}

/// Indexes are gapless (`append` holds them to it), so the entries sit in a
/// ring by position: entry `purged + 1 + i` at `i`. Appending, purging from
/// the front and cutting the back are O(1) per entry, where a map paid a
/// tree insert per entry and a split per purge (0.9% of the write path's
/// CPU samples in the append bench).
#[derive(Debug, Default)]
pub struct EntryIndex {
    entries: VecDeque<EntryLocations>,
    /// Entries at or below it are no longer held.
    purged: u64,
}

impl EntryIndex {
    /// An index whose entries start after `purged`.
    pub fn after(purged: u64) -> Self {
        Self { entries: VecDeque::new(), purged }
    }

    /// Adds the next entry. Log indexes rise by one at every append: a gap
    /// or a step back means the planner and the log disagree on what was
    /// written, and nothing after that can be trusted.
    pub fn append(&mut self, at: EntryLocations) {
        let index = at.id.index;
        let expected = self.last_index() + 1;
        assert_eq!(
            index, expected,
            "invariant broken: log index {index} appended where the log's next index is {expected}"
        );
        self.entries.push_back(at);
    }

    /// The index of the last entry appended (the purge watermark when none
    /// is held).
    pub fn last_index(&self) -> u64 {
        self.purged + self.entries.len() as u64
    }

    pub fn purged(&self) -> u64 {
        self.purged
    }

    pub fn get(&self, index: u64) -> Option<&EntryLocations> {
        let at = index.checked_sub(self.purged + 1)?;
        self.entries.get(usize::try_from(at).ok()?)
    }

    /// Forgets every entry at or below `index`.
    pub fn purge_through(&mut self, index: u64) {
        if index <= self.purged {
            return;
        }
        let gone = (index - self.purged).min(self.entries.len() as u64) as usize;
        self.entries.drain(..gone);
        self.purged = index;
    }

    /// Removes and answers every entry after `index`, oldest first.
    pub fn truncate_after(&mut self, index: u64) -> Vec<EntryLocations> {
        let kept = index.saturating_sub(self.purged).min(self.entries.len() as u64) as usize;
        self.entries.split_off(kept).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(index: u64) -> EntryLocations {
        let loc = Location { log: 1, segment: 1, pos: index * 10, frame_len: 10 };
        EntryLocations { id: LogId::new(1, index), leader: 1, entry: loc, stubs: vec![], messages: vec![] }
    }

    #[test]
    fn entries_are_held_between_the_purge_watermark_and_the_last_append() {
        let mut index = EntryIndex::default();
        for i in 1..=5 {
            index.append(at(i));
        }
        index.purge_through(2);
        assert!(index.get(2).is_none() && index.get(3).is_some());
        let cut = index.truncate_after(3);
        assert_eq!(cut.iter().map(|e| e.id.index).collect::<Vec<_>>(), vec![4, 5]);
        assert_eq!(index.last_index(), 3);
        index.append(at(4));
        index.purge_through(4);
        assert_eq!(index.last_index(), 4, "an empty index continues after its watermark");
    }

    #[test]
    #[should_panic(expected = "invariant broken: log index 3 appended where the log's next index is 2")]
    fn an_append_that_skips_an_index_is_caught() {
        let mut index = EntryIndex::default();
        index.append(at(1));
        index.append(at(3));
    }
}
