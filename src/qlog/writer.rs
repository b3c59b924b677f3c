//! The group commit on the qlog side: every entry goes into every log it
//! touches (message records first, then the entry record or its stub), staged
//! in RAM as it is planned; `take_pending` then hands the whole batch's bytes
//! to a `PendingSync`, which writes and fdatasyncs each touched log once.

use super::entry_index::{EntryIndex, EntryLocations};
use super::entry_record::{EntryRecord, Stub};
use super::files::{FileTable, Location};
use super::layout::{Layout, SYSTEM_LOG};
use super::message_record::MessageRecord;
use super::pending_sync::PendingSync;
use super::queue_log::QueueLog;
use super::retired::RetiredLogs;
use crate::clock::Clock;
use crate::log_id::LogId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// One entry as the writer receives it.
pub struct EntryWrite<'a> {
    pub id: LogId,
    /// The node that led in `id.term`.
    pub leader: u64,
    /// The planner's encoded effects.
    pub effects: Vec<u8>,
    /// Every queue the entry touches, messages or not.
    pub queues: Vec<u64>,
    pub messages: &'a [MessageRecord],
}

pub struct QlogWriter {
    root: PathBuf,
    layout: Layout,
    logs: BTreeMap<u64, QueueLog>,
    /// The logs that hold staged bytes.
    staged: BTreeSet<u64>,
    segment_bytes: u64,
    seal_age: Duration,
    /// Where retired logs are handed to reclaim.
    retired: Arc<RetiredLogs>,
    /// Where every entry above the purge watermark sits.
    index: EntryIndex,
    /// What "older than the seal age" is measured on.
    clock: Arc<dyn Clock>,
}

impl QlogWriter {
    /// A writer that continues `logs`, whose entries after the purge
    /// watermark `index` holds (both as recovery left them), and seals
    /// files by age on `clock`.
    pub fn new(
        root: PathBuf,
        layout: Layout,
        (logs, index): (Vec<QueueLog>, EntryIndex),
        (segment_bytes, seal_age, clock): (u64, Duration, Arc<dyn Clock>),
        retired: Arc<RetiredLogs>,
    ) -> Self {
        let logs = logs.into_iter().map(|l| (l.id, l)).collect();
        Self { root, layout, logs, staged: BTreeSet::new(), segment_bytes, seal_age, retired, index, clock }
    }

    /// Where the records of the entries above the purge watermark sit.
    pub fn index(&self) -> &EntryIndex {
        &self.index
    }

    /// Forgets where the entries at or below `index` sit: the checkpoint
    /// holds their effects, and nothing reads them as entries again.
    pub fn purge_through(&mut self, index: u64) {
        self.index.purge_through(index);
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The logs an entry touching `queues` is written into, ascending.
    pub fn touched_logs(&self, queues: &[u64]) -> Vec<u64> {
        let set: BTreeSet<u64> = queues.iter().map(|q| self.layout.log_of(*q)).collect();
        if set.is_empty() {
            vec![SYSTEM_LOG]
        } else {
            set.into_iter().collect()
        }
    }

    /// Stages one entry; answers where each of its message records will sit.
    pub fn stage(&mut self, entry: &EntryWrite<'_>) -> Vec<Location> {
        let touched = self.touched_logs(&entry.queues);
        let body = EntryRecord::encode_parts(entry.id, entry.leader, &touched, &entry.effects);
        // Only stubs carry the digest, and an entry of one log has none.
        let digest = if touched.len() > 1 { EntryRecord::digest(&body) } else { [0; 16] };
        let mut locs = vec![None; entry.messages.len()];
        let (mut entry_at, mut stubs) = (None, Vec::with_capacity(touched.len() - 1));
        let homes: Vec<u64> = entry.messages.iter().map(|m| self.layout.log_of(m.span.queue)).collect();
        let now = self.clock.monotonic_us();
        for (ordinal, log_id) in touched.iter().enumerate() {
            let log = self.open_log(*log_id, now);
            for (i, m) in entry.messages.iter().enumerate() {
                if homes[i] == *log_id {
                    locs[i] = Some(log.stage(|out| m.encode_into(out), (entry.id, Some(m.span), m.timestamp_us), now));
                }
            }
            if ordinal == 0 {
                entry_at = Some(log.stage(|out| out.extend_from_slice(&body), (entry.id, None, 0), now));
            } else {
                let stub = Stub {
                    id: entry.id,
                    home: touched[0],
                    copies: touched.len() as u32,
                    ordinal: ordinal as u32,
                    digest,
                };
                stubs.push(log.stage(|out| out.extend_from_slice(&stub.encode()), (entry.id, None, 0), now));
            }
        }
        let messages: Vec<Location> = locs.into_iter().map(|l| l.expect("every message's queue is touched")).collect();
        let entry_at = entry_at.expect("an entry touches at least one log");
        self.index.append(EntryLocations {
            id: entry.id,
            leader: entry.leader,
            entry: entry_at,
            stubs,
            messages: messages.clone(),
        });
        messages
    }

    /// Cuts every log after entry `index`, at runtime: the records of every
    /// later entry go, and the logs continue from there. For a raft log
    /// whose tail a new leader overwrites, so only entries that were never
    /// applied may be cut, and every write handed off must have been synced
    /// (nothing is staged, and no group commit is in flight). Answers how
    /// many entries were cut.
    pub fn truncate_after(&mut self, index: u64, files: &FileTable) -> std::io::Result<usize> {
        assert!(
            self.staged.is_empty(),
            "invariant broken: the log was truncated after {index} with a group commit staged"
        );
        assert!(
            index >= self.index.purged(),
            "invariant broken: the log was truncated after {index}, below its purge watermark {}",
            self.index.purged()
        );
        let cut = self.index.truncate_after(index);
        // Per log, the first record of a cut entry: everything from it goes.
        let mut from: BTreeMap<u64, (u32, u64)> = BTreeMap::new();
        for at in cut.iter().flat_map(|e| e.all()) {
            let first = from.entry(at.log).or_insert((at.segment, at.pos));
            *first = (*first).min((at.segment, at.pos));
        }
        for (log, (segment, pos)) in from {
            self.logs.get_mut(&log).expect("a log the index names is open").cut(files, segment, pos)?;
        }
        Ok(cut.len())
    }

    /// Everything staged since the last call, as one group commit.
    pub fn take_pending(&mut self) -> PendingSync {
        let logs = &mut self.logs;
        let writes = std::mem::take(&mut self.staged)
            .into_iter()
            .map(|id| logs.get_mut(&id).expect("a staged log is open").take_write())
            .collect();
        PendingSync { writes }
    }

    /// Lets go of the logs of deleted queues (`deleted(queue id)`), in a
    /// layout of one log per queue, and hands them to reclaim, which removes
    /// their directories. A deleted queue's id is never used again, and the
    /// planner writes nothing that names it, so no entry reaches those logs
    /// again.
    /// `taken` is how many group commits the syncer has taken so far.
    pub fn retire(&mut self, deleted: impl Fn(u64) -> bool, taken: u64) {
        if self.layout.shards > 0 {
            return;
        }
        let staged = &self.staged;
        let gone: Vec<u64> =
            self.logs.keys().copied().filter(|id| *id != SYSTEM_LOG && !staged.contains(id) && deleted(*id)).collect();
        for id in gone {
            self.logs.remove(&id);
            self.retired.add(id, taken);
        }
    }

    /// The syncer has finished the first `count` group commits it took.
    pub fn batches_synced(&self, count: u64) {
        self.retired.synced(count);
    }

    /// Seals the active file of every log that has had no write since it got
    /// older than the seal age: a queue that stops receiving writes still
    /// has its last file sealed, so that reclaim can reach it. Answers
    /// whether any log rolled; its steps go with the next group commit.
    pub fn seal_idle(&mut self) -> bool {
        let mut rolled = false;
        let now = self.clock.monotonic_us();
        for (id, log) in &mut self.logs {
            if !self.staged.contains(id) && log.roll_if_due(self.segment_bytes, self.seal_age, now) {
                self.staged.insert(*id);
                rolled = true;
            }
        }
        rolled
    }

    /// The log `id`, created on first use and rolled before its first record
    /// of a batch when its active file is full.
    fn open_log(&mut self, id: u64, now_us: u64) -> &mut QueueLog {
        let root = &self.root;
        let log = self.logs.entry(id).or_insert_with(|| QueueLog::create(root, id));
        if self.staged.insert(id) {
            log.roll_if_due(self.segment_bytes, self.seal_age, now_us);
        }
        log
    }
}
