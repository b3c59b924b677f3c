//! Where each stored message sits in the qlog. RAM only: rebuilt from the
//! qlog's records at every boot, never checkpointed.

use crate::qlog::files::Location;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub first_offset: u64,
    pub count: u32,
    /// When the append was stored: every message of a span shares it.
    pub timestamp_us: i64,
    pub at: Location,
}

impl Span {
    pub fn end(&self) -> u64 {
        self.first_offset + self.count as u64
    }
}

#[derive(Default)]
pub struct Locator {
    spans: HashMap<(u64, u64), Vec<Span>>,
}

impl Locator {
    /// How many spans it holds: one per push or produced batch stored.
    pub fn span_count(&self) -> usize {
        self.spans.values().map(Vec::len).sum()
    }

    /// Records an append; appends of one partition arrive in offset order.
    /// Below a partition's `txns_start` there may be gaps, where reclaim
    /// freed a file while an older one was kept for other records.
    pub fn insert(&mut self, queue: u64, partition: u64, span: Span) {
        let spans = self.spans.entry((queue, partition)).or_default();
        debug_assert!(spans.last().is_none_or(|s| s.end() <= span.first_offset));
        if spans.len() == spans.capacity() {
            // An eighth more, not twice as many: a partition's spans are
            // the locator's bulk, and a doubled list would leave up to half
            // of its memory unused. A large list grows in place (the
            // allocator remaps it), so growing often costs no copy.
            spans.reserve_exact(spans.len() / 8 + 16);
        }
        spans.push(span);
    }

    /// Moves the span starting at `first_offset` to `at`, where reclaim
    /// copied its record.
    pub fn relocate(&mut self, queue: u64, partition: u64, first_offset: u64, at: Location) {
        let Some(spans) = self.spans.get_mut(&(queue, partition)) else { return };
        if let Ok(i) = spans.binary_search_by_key(&first_offset, |s| s.first_offset) {
            spans[i].at = at;
        }
    }

    /// Forgets the spans that end at or below `offset`.
    pub fn remove_below(&mut self, queue: u64, partition: u64, offset: u64) {
        if let Some(spans) = self.spans.get_mut(&(queue, partition)) {
            let dead = spans.partition_point(|s| s.end() <= offset);
            spans.drain(..dead);
        }
    }

    /// The spans from the one holding `offset` to the end of the partition.
    pub fn spans_from(&self, queue: u64, partition: u64, offset: u64) -> &[Span] {
        let Some(spans) = self.spans.get(&(queue, partition)) else {
            return &[];
        };
        let i = spans.partition_point(|s| s.end() <= offset);
        &spans[i..]
    }

    pub fn remove(&mut self, queue: u64, partition: u64) {
        self.spans.remove(&(queue, partition));
    }

    /// The first offset stored at or after `timestamp_us`, if any.
    pub fn first_at_or_after(&self, queue: u64, partition: u64, timestamp_us: i64) -> Option<u64> {
        let spans = self.spans.get(&(queue, partition))?;
        let i = spans.partition_point(|s| s.timestamp_us < timestamp_us);
        spans.get(i).map(|s| s.first_offset)
    }

    /// The time each offset in `first..=last` was stored.
    pub fn timestamp_of(&self, queue: u64, partition: u64, offset: u64) -> Option<i64> {
        self.spans_from(queue, partition, offset).first().filter(|s| s.first_offset <= offset).map(|s| s.timestamp_us)
    }

    /// One past the last offset stored for the partition, if it holds any.
    pub fn end(&self, queue: u64, partition: u64) -> Option<u64> {
        self.spans.get(&(queue, partition))?.last().map(Span::end)
    }

    /// The first offset stored for the partition, if it holds any.
    pub fn start(&self, queue: u64, partition: u64) -> Option<u64> {
        self.spans.get(&(queue, partition))?.first().map(|s| s.first_offset)
    }
}
