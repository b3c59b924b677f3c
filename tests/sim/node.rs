//! One node on one thread: the planner, the qlog writer and apply composed
//! as the local replicator composes them on its three threads, over the
//! simulated storage. A group commit is one call; a crash is the storage's,
//! and a boot is the real boot path (layout, checkpoint, recovery).
//!
//! It keeps a vote and a committed index under `raft/` as a raft node does
//! (`log_store::raft_state`), so a boot replays through the committed index
//! only, and `lead_new_term` does what a single-voter openraft node does
//! after it: a new term, durably voted, opened by a blank entry whose commit
//! commits every entry before it, read back from the log by index.

use super::storage::SimStorage;
use queen::seams::boot::Replay;
use queen::seams::boot::{LogSite, Writing};
use queen::seams::clock::Clock;
use queen::seams::log_id::{LogId, SINGLE_NODE};
use queen::seams::message::Message;
use queen::seams::planner::apply;
use queen::seams::planner::{Answer, Command};
use queen::seams::planner::{Effect, Entry, EntryBody};
use queen::seams::planner::{Planned, Planner};
use queen::seams::qlog::RetiredLogs;
use queen::seams::qlog::{EntryWrite, QlogWriter};
use queen::seams::qlog::{FileTable, Location};
use queen::seams::qlog::{Layout, FORMAT};
use queen::seams::qlog::{MessageRecord, Piece};
use queen::seams::reclaim::{Freed, Pass, Policy};
use queen::seams::replicate::log_store;
use queen::seams::replicate::log_store::LogReadError;
use queen::seams::replicate::{RaftState, RaftStateError, Vote};
use queen::seams::store::CheckpointFile;
use queen::seams::store::Membership;
use queen::seams::store::Store;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Where the simulated node keeps its qlog.
pub const QLOG_ROOT: &str = "/sim/qlog";
/// Where it keeps its vote and committed index.
const RAFT_DIR: &str = "/sim/raft";
/// A file whose first record is this old is sealed when its log is idle.
const SEAL_AGE: Duration = Duration::from_secs(30);

/// The writer's clock, moved by the simulation: microseconds since the
/// node's first group commit after its boot, and the simulation's time.
#[derive(Default)]
struct SimClock {
    now_us: AtomicU64,
    wall_us: AtomicI64,
}

impl Clock for SimClock {
    fn monotonic_us(&self) -> u64 {
        self.now_us.load(Ordering::Relaxed)
    }

    fn wall_us(&self) -> i64 {
        self.wall_us.load(Ordering::Relaxed)
    }
}

pub struct SimNode {
    checkpoint: CheckpointFile,
    pub store: Store,
    planner: Planner,
    writer: QlogWriter,
    pub files: Arc<FileTable>,
    /// Group commits written, as the writer counts them to retire logs.
    batch: u64,
    /// The applied index of the last checkpoint committed.
    checkpointed: u64,
    clock: Arc<SimClock>,
    /// The simulation's time at the first commit after the boot.
    booted_at_us: Option<i64>,
    raft: RaftState,
    /// The term this node leads in.
    term: u64,
}

/// A group commit whose write or fdatasync failed: the node stops, and
/// none of the batch's commands is answered.
#[derive(Debug)]
pub struct Stopped(pub std::io::Error);

impl SimNode {
    /// Boots on `storage` with the checkpoint in `checkpoint_dir`, through
    /// the real boot path; a refusal is answered as its FATAL line's text.
    pub fn boot(storage: &SimStorage, checkpoint_dir: &Path, segment_bytes: u64) -> Result<SimNode, String> {
        let root = PathBuf::from(QLOG_ROOT);
        let wanted = Layout { lanes: 1, shards: 0, replicator: "local".into(), groups: 1 };
        let site = LogSite { storage: Arc::new(storage.clone()), root, wanted, format: FORMAT };
        let laid_out = site.lay_out().map_err(|e| e.to_string())?;
        let checkpoint = CheckpointFile::open(checkpoint_dir).map_err(|e| e.to_string())?;
        let rows = checkpoint.load().map_err(|e| e.to_string())?;
        let mut store = Store::from_rows(rows, checkpoint.path()).map_err(|e| e.to_string())?;
        let raft = RaftState::open(Arc::new(storage.clone()), Path::new(RAFT_DIR)).map_err(|e| e.to_string())?;
        let term = raft.vote().map_err(|e| e.to_string())?.map_or(1, |v| v.term);
        let committed = raft.committed().map_err(|e| e.to_string())?.map(|(c, _)| c.index);
        let replay = Replay { committed, hold_from: None, apply: None };
        let clock = Arc::new(SimClock::default());
        let writing = Writing { segment_bytes, seal_age: SEAL_AGE, clock: clock.clone(), retired: Arc::default() };
        let opened = laid_out.recover(&mut store, 64, (None, replay), writing).map_err(|e| e.to_string())?;
        let (files, writer, checkpointed) = (opened.files, opened.writer, opened.purged);
        let mut planner = Planner::new(1, opened.last);
        planner.lead((term, SINGLE_NODE), opened.last);
        Ok(SimNode {
            checkpoint,
            store,
            planner,
            writer,
            files,
            batch: 0,
            checkpointed,
            clock,
            booted_at_us: None,
            raft,
            term,
        })
    }

    /// Leads a new term as a single voter does after a boot: votes for
    /// itself durably, appends a blank entry (and, given one, a membership
    /// entry), and commits them, which commits every entry the log kept
    /// before them: those past the saved committed index are read back by
    /// index and applied. Answers the entries it wrote.
    pub fn lead_new_term(&mut self, now_us: i64, membership: Option<Membership>) -> Result<Vec<Entry>, Stopped> {
        self.term += 1;
        let vote = Vote { term: self.term, node: SINGLE_NODE, committed: true };
        self.raft.save_vote(vote).map_err(raft_stopped)?;
        let mut effects = vec![vec![]];
        if let Some(membership) = membership {
            effects.push(vec![Effect::Membership(membership)]);
        }
        // Written without the planner, as openraft writes a term's first
        // entries; the planner then leads after them.
        let after = self.last_log_id().index;
        let entries: Vec<Entry> = (1..)
            .zip(effects)
            .map(|(n, effects)| Entry {
                id: LogId::new(self.term, after + n),
                leader: SINGLE_NODE,
                body: EntryBody { timestamp_us: now_us, effects },
                messages: vec![],
            })
            .collect();
        let last = entries.last().expect("a blank entry at least").id;
        self.planner.lead((self.term, SINGLE_NODE), last);
        self.stage_and_sync(&entries, now_us).1.map_err(Stopped)?;
        self.writer.batches_synced(self.batch);
        self.save_committed(last)?;
        self.apply_through(last.index);
        self.planner.caught_up_with(&self.store);
        Ok(entries)
    }

    /// Saves `id` as the committed index, as openraft's `save_committed`.
    pub fn save_committed(&mut self, id: LogId) -> Result<(), Stopped> {
        self.raft.save_committed(id, self.planner.node()).map_err(raft_stopped)
    }

    /// The last entry the log holds, or the last applied when the log holds
    /// none above the purge watermark.
    pub fn last_log_id(&self) -> LogId {
        let last = self.last_index();
        self.writer.index().get(last).map_or(self.store.applied, |at| at.id)
    }

    /// Plans `commands` as one group commit at `now_us`, makes it durable
    /// and applies it. Answers the entries it wrote (for the reference run:
    /// those of a batch that failed may have reached the logs too), and the
    /// commands' answers or the failure that stops the node.
    pub fn commit(&mut self, commands: Vec<Command>, now_us: i64) -> (Vec<Entry>, Result<Vec<Answer>, Stopped>) {
        let (planned, locations, written) = self.write(commands, now_us);
        let entries: Vec<Entry> = planned.iter().filter_map(|p| p.entry.clone()).collect();
        if let Err(e) = written {
            return (entries, Err(Stopped(e)));
        }
        for (e, locs) in entries.iter().zip(&locations) {
            apply(&mut self.store, e, locs);
        }
        self.planner.caught_up_with(&self.store);
        self.writer.batches_synced(self.batch);
        (entries, Ok(planned.into_iter().map(|p| p.answer).collect()))
    }

    /// Plans `commands` as one group commit and makes it durable without
    /// applying it, as a raft leader holds entries not yet committed; the
    /// planner's overlay keeps their decisions. Answers the entries.
    pub fn append(&mut self, commands: Vec<Command>, now_us: i64) -> Vec<Entry> {
        let (planned, _, written) = self.write(commands, now_us);
        written.expect("no fault is armed");
        planned.into_iter().filter_map(|p| p.entry).collect()
    }

    /// Plans `commands` as the next group commit, stages their entries and
    /// writes and fdatasyncs them: the planned commands, where each entry's
    /// message records sit, and how the write went.
    fn write(
        &mut self,
        commands: Vec<Command>,
        now_us: i64,
    ) -> (Vec<Planned>, Vec<Vec<Location>>, std::io::Result<()>) {
        let planned: Vec<Planned> = commands.into_iter().map(|c| self.planner.plan(&self.store, c, now_us)).collect();
        let (locations, written) = self.stage_and_sync(planned.iter().filter_map(|p| p.entry.as_ref()), now_us);
        (planned, locations, written)
    }

    /// Stages `entries` as the next group commit at `now_us`, and writes and
    /// fdatasyncs them: where each one's message records sit, and how the
    /// write went.
    fn stage_and_sync<'e>(
        &mut self,
        entries: impl IntoIterator<Item = &'e Entry>,
        now_us: i64,
    ) -> (Vec<Vec<Location>>, std::io::Result<()>) {
        self.tick(now_us);
        self.batch += 1;
        let locations = entries
            .into_iter()
            .map(|e| {
                let queues = e.queues();
                let effects = e.body.encode();
                self.writer.stage(&EntryWrite { id: e.id, leader: e.leader, effects, queues, messages: &e.messages })
            })
            .collect();
        (locations, self.writer.take_pending().run_in_turn(&self.files, None))
    }

    /// Applies the appended entries up to `index`, read back from the log.
    pub fn apply_through(&mut self, index: u64) {
        let from = self.store.applied.index + 1;
        for entry in self.entries(from..=index).expect("appended entries read back") {
            let at = self.writer.index().get(entry.id.index).expect("an entry read back is indexed").messages.clone();
            apply(&mut self.store, &entry, &at);
        }
    }

    /// Cuts the log after `index` (applied entries stay), and plans anew
    /// from there, as a node does that lost its leadership.
    pub fn truncate_after(&mut self, index: u64) -> usize {
        assert!(index >= self.store.applied.index, "only entries never applied are cut");
        let cut = self.writer.truncate_after(index, &self.files).expect("the cut is made");
        // A node whose log is cut lost its term to another leader; if it
        // leads again, it is in a later term.
        self.term += 1;
        self.planner.lead((self.term, SINGLE_NODE), self.last_log_id());
        cut
    }

    pub fn entries(&self, range: RangeInclusive<u64>) -> Result<Vec<Entry>, LogReadError> {
        log_store::entries(&self.writer, &self.files, range)
    }

    pub fn last_index(&self) -> u64 {
        log_store::last_index(&self.writer)
    }

    /// Forgets where the entries through `index` sit.
    pub fn purge_through(&mut self, index: u64) {
        self.writer.purge_through(index);
    }

    /// The transactionId and value stored at an offset, read through the
    /// locator and the qlog as a reader does; or why it cannot be read.
    pub fn read(&self, q: u64, p: u64, offset: u64) -> Result<(String, Vec<u8>), String> {
        let next = self.store.partition(q, p).map(|r| r.next_offset);
        let span = *self
            .store
            .locator
            .spans_from(q, p, offset)
            .first()
            .ok_or_else(|| format!("no span from offset {offset} (high watermark {next:?})"))?;
        if span.first_offset > offset || span.end() <= offset {
            return Err(format!("the span from {offset} is {span:?} (high watermark {next:?})"));
        }
        let body = self.files.read_body(span.at).map_err(|e| format!("{span:?}: {e}"))?;
        let record = MessageRecord::decode(&body).map_err(|e| e.to_string())?;
        let Some((_, Piece::Message(payload))) = record.piece_at(offset) else {
            return Err(format!("offset {offset} of {span:?} holds no message stored one by one"));
        };
        let message = Message::decode(&payload.raw().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        Ok((message.transaction_id.clone(), message.value_bytes().to_vec()))
    }

    /// The transactionId stored at an offset of a queue's partition, by name.
    pub fn transaction_at(&self, queue: &str, partition: &str, offset: u64) -> Option<String> {
        let q = self.store.queue_id(queue)?;
        let p = self.store.partition_id(q, partition)?;
        self.read(q, p, offset).ok().map(|(txn, _)| txn)
    }

    /// Moves the writer's clock to the simulation's `now_us`.
    fn tick(&mut self, now_us: i64) {
        let booted = *self.booted_at_us.get_or_insert(now_us);
        self.clock.now_us.store(now_us.saturating_sub(booted).max(0) as u64, Ordering::Relaxed);
        self.clock.wall_us.store(now_us, Ordering::Relaxed);
    }

    /// What the sequencer does once a second: seals the files of idle logs
    /// grown older than the seal age, in a group commit of their own.
    pub fn tend_idle(&mut self, now_us: i64) -> Result<bool, Stopped> {
        self.tick(now_us);
        if !self.writer.seal_idle() {
            return Ok(false);
        }
        self.writer.take_pending().run_in_turn(&self.files, None).map_err(Stopped)?;
        Ok(true)
    }

    /// The process dies: nothing more is written or synced, and the
    /// checkpoint's environment is closed so that a boot can open it again.
    pub fn die(self) {
        self.files.abandon();
    }

    /// Commits a store checkpoint at the applied index; the log then
    /// forgets where the entries up to it sit, as the local replicator's does.
    pub fn checkpoint(&mut self) {
        let job = self.store.checkpoint_job();
        let mut rows = Vec::with_capacity(job.rows());
        for c in job.changes {
            c.encode_into(&mut rows);
        }
        self.checkpoint.write(&rows, &job.meta).expect("the checkpoint is on the real disk and does not fail");
        self.checkpointed = job.applied.index;
        self.writer.purge_through(self.checkpointed);
    }

    /// One reclaim pass over the whole qlog, as the retention scanner runs it.
    pub fn reclaim(&mut self) -> Freed {
        let store = RwLock::new(std::mem::take(&mut self.store));
        let retired = RetiredLogs::default();
        let pass = Pass {
            root: Path::new(QLOG_ROOT),
            files: &self.files,
            store: &store,
            checkpointed: self.checkpointed,
            policy: Policy { shared_logs: false, min_dead_pct: None },
            retired: &retired,
            clock: &*self.clock,
        };
        let (freed, _) = pass.run((0, 0)).expect("a reclaim pass on simulated storage");
        self.store = store.into_inner().expect("store lock");
        freed
    }
}

/// A vote or committed index that could not be saved stops the node, as a
/// failed fdatasync of the log does.
fn raft_stopped(e: RaftStateError) -> Stopped {
    match e {
        RaftStateError::Io { source, .. } => Stopped(source),
        other => Stopped(std::io::Error::other(other.to_string())),
    }
}

/// Where a reference apply puts messages: nowhere read.
pub fn nowhere(entry: &Entry) -> Vec<Location> {
    vec![Location { log: 0, segment: 0, pos: 0, frame_len: 0 }; entry.messages.len()]
}
