//! Kafka's time index, for ListOffsets by time: which record a consumer
//! seeking to an event time starts at. A record's time is its timestamp as
//! a fetch answers it (the producer's CreateTime, or for a message pushed
//! over HTTP, which has none, the time Queen stored it), and producers may
//! set it to anything, out of order. Kafka answers a lookup with the first
//! offset whose timestamp is at or after the target; so does this index.
//!
//! The qlog keeps timestamps only inside the stored messages, so the index
//! is kept in memory, per partition, one entry per append (the locator's
//! span): the largest timestamp among its records and the largest of all
//! appends up to it. That running largest only grows, so a lookup is a
//! binary search for the first append whose running largest reaches the
//! target (every earlier record is older than the target, and this append
//! holds the first record that is not), then one read of that append.
//!
//! A partition's index is built at its first lookup, by reading every
//! record from the log start once, and then grows by the appends made
//! since at each lookup. When retention moves the log start, entries below
//! it go and the running largest is taken again over those that are left.

use super::records::timestamp_ms;
use crate::message_view::MessageView;
use crate::node::Node;
use crate::reader::{ReaderError, StoredMessage};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The time indexes of the partitions looked up so far, by (queue, partition).
#[derive(Default)]
pub struct TimeIndex {
    partitions: Mutex<HashMap<(u64, u64), SharedTimes>>,
}

/// One partition's index, locked on its own so lookups of other partitions
/// do not wait on its reads.
type SharedTimes = Arc<Mutex<PartitionTimes>>;

/// One append's records as the index sees them.
#[derive(Debug, Clone, Copy)]
struct Entry {
    first_offset: u64,
    end: u64,
    /// The largest timestamp of its records at or above the log start.
    max_ms: i64,
    /// The largest of `max_ms` over this entry and every one before it.
    running_max_ms: i64,
}

/// A partition's entries, for the records from `log_start` to `end`.
#[derive(Default)]
struct PartitionTimes {
    log_start: u64,
    end: u64,
    entries: Vec<Entry>,
}

impl TimeIndex {
    /// The first record at or above the log start whose timestamp is at or
    /// after `target_ms`: (offset, timestamp).
    pub fn first_at_or_after(
        &self,
        node: &Node,
        queue: u64,
        partition: u64,
        target_ms: i64,
    ) -> Result<Option<(u64, i64)>, ReaderError> {
        self.with_partition(node, queue, partition, |times, log_start| {
            let i = times.entries.partition_point(|e| e.running_max_ms < target_ms);
            match times.entries.get(i) {
                Some(e) => first_record(node, queue, partition, e, log_start, |t| t >= target_ms),
                None => Ok(None),
            }
        })
    }

    /// The first record holding the largest timestamp: (offset, timestamp).
    pub fn max_timestamp(&self, node: &Node, queue: u64, partition: u64) -> Result<Option<(u64, i64)>, ReaderError> {
        self.with_partition(node, queue, partition, |times, log_start| {
            let Some(max_ms) = times.entries.last().map(|e| e.running_max_ms) else { return Ok(None) };
            let i = times.entries.partition_point(|e| e.running_max_ms < max_ms);
            first_record(node, queue, partition, &times.entries[i], log_start, |t| t == max_ms)
        })
    }

    /// Brings the partition's entries up to its log start and end, then
    /// answers `lookup` over them. File reads block: call it off the async
    /// workers.
    fn with_partition<T>(
        &self,
        node: &Node,
        queue: u64,
        partition: u64,
        lookup: impl FnOnce(&PartitionTimes, u64) -> Result<T, ReaderError>,
    ) -> Result<T, ReaderError> {
        let times = {
            let mut all = self.partitions.lock().expect("time index lock");
            if !all.contains_key(&(queue, partition)) {
                // Forget the partitions deleted since, before adding one.
                all.retain(|(q, p), _| node.group_of_id(*q).view.local().partition(*q, *p).is_some());
            }
            all.entry((queue, partition)).or_default().clone()
        };
        let mut times = times.lock().expect("partition time index lock");
        let (log_start, spans) = {
            let store = node.group_of_id(queue).view.local();
            let Some(row) = store.partition(queue, partition) else { return lookup(&PartitionTimes::default(), 0) };
            let from = times.end.max(row.log_start);
            (row.log_start, store.locator.spans_from(queue, partition, from).to_vec())
        };
        times.forget_below(node, queue, partition, log_start)?;
        let covered = times.end;
        for span in spans.iter().filter(|s| s.end() > covered) {
            let from = span.first_offset.max(log_start);
            times.push(span.first_offset, span.end(), max_timestamp_of(node, queue, partition, from, span.end())?);
        }
        lookup(&times, log_start)
    }
}

impl PartitionTimes {
    /// Drops what retention removed below `log_start`: whole appends, and
    /// the records below it of the append it falls in, whose largest
    /// timestamp is read again.
    fn forget_below(&mut self, node: &Node, queue: u64, partition: u64, log_start: u64) -> Result<(), ReaderError> {
        if log_start <= self.log_start {
            return Ok(());
        }
        self.log_start = log_start;
        let gone = self.entries.partition_point(|e| e.end <= log_start);
        self.entries.drain(..gone);
        if let Some(first) = self.entries.first_mut().filter(|e| e.first_offset < log_start) {
            match max_timestamp_of(node, queue, partition, log_start, first.end)? {
                Some(max_ms) => first.max_ms = max_ms,
                None => {
                    self.entries.remove(0);
                }
            }
        }
        let mut running = i64::MIN;
        for e in &mut self.entries {
            running = running.max(e.max_ms);
            e.running_max_ms = running;
        }
        Ok(())
    }

    /// Adds the append `from..end` if it holds a record, whose largest
    /// timestamp is `max_ms`.
    fn push(&mut self, first_offset: u64, end: u64, max_ms: Option<i64>) {
        self.end = end;
        let Some(max_ms) = max_ms else { return };
        let running_max_ms = self.entries.last().map_or(max_ms, |e| e.running_max_ms.max(max_ms));
        self.entries.push(Entry { first_offset, end, max_ms, running_max_ms });
    }
}

/// The records of `from..end` still held, in one append.
fn read_records(
    node: &Node,
    queue: u64,
    partition: u64,
    from: u64,
    end: u64,
) -> Result<Vec<StoredMessage<MessageView>>, ReaderError> {
    Ok(node.group_of_id(queue).reader.read_from(queue, partition, from, end, u64::MAX)?.0)
}

/// The largest timestamp of the records of `from..end` still held.
fn max_timestamp_of(node: &Node, queue: u64, partition: u64, from: u64, end: u64) -> Result<Option<i64>, ReaderError> {
    Ok(read_records(node, queue, partition, from, end)?.iter().map(timestamp_ms).max())
}

/// The first record of `entry`'s append at or above `log_start` whose
/// timestamp passes `wanted`: (offset, timestamp).
fn first_record(
    node: &Node,
    queue: u64,
    partition: u64,
    entry: &Entry,
    log_start: u64,
    wanted: impl Fn(i64) -> bool,
) -> Result<Option<(u64, i64)>, ReaderError> {
    let records = read_records(node, queue, partition, entry.first_offset.max(log_start), entry.end)?;
    Ok(records.iter().map(|m| (m.offset, timestamp_ms(m))).find(|(_, t)| wanted(*t)))
}
