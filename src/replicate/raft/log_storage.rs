//! openraft's log storage over the log store: `append` stages an entry's
//! records in the open batch and returns, and the syncer calls openraft's
//! `IOFlushed` only once they are fdatasynced, so appends submitted while
//! one fdatasync runs share the next (openraft 0.10 does not wait for one
//! append's flush before it submits the next). The vote, the committed id
//! and the purge watermark are the files of `raft_state.rs`.
//!
//! openraft reads an entry back as soon as `append` returns (to replicate
//! it, and to apply it), when its records may still be staged and not yet
//! in a file: the entries appended are kept in memory until they are both
//! durable and applied, and read from the qlog after that.

use super::committed::Committed;
use super::types::{to_qlog, to_qlog_entry, to_raft, to_raft_entry, Queen, RaftEntry, RaftLogId};
use crate::log_id::LogId;
use crate::metrics::Metrics;
use crate::planner::effect::Entry;
use crate::qlog::entry_index::EntryLocations;
use crate::qlog::files::FileTable;
use crate::qlog::sync_ledger::SyncLedger;
use crate::qlog::writer::QlogWriter;
use crate::replicate::batch::Ticket;
use crate::replicate::log_store::open_batch::OpenBatch;
use crate::replicate::log_store::raft_state::{RaftState, RaftStateError, Vote};
use crate::replicate::log_store::read_entry;
use crate::replicate::log_store::syncer::Syncer;
use crate::replicate::stage::spawn;
use openraft::storage::{IOFlushed, LogState, RaftLogStorage};
use openraft::{LogIdOptionExt, RaftLogReader};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type RaftVote = openraft::impls::Vote<openraft::impls::leader_id_adv::LeaderId<u64, u64>>;

/// One `append` on its way through the log store: its entries, and who
/// hears that they are durable.
pub struct Appended {
    entries: Vec<Entry>,
    flushed: Flushed,
}

/// Who hears that an append is durable: openraft, through its callback, or
/// a boot that writes before openraft starts.
enum Flushed {
    Raft(IOFlushed<Queen>),
    Boot(std::sync::mpsc::Sender<()>),
}

impl Ticket for Appended {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// The log storage, and its reader: clones share one log.
#[derive(Clone)]
pub struct RaftLog {
    shared: Arc<Shared>,
}

struct Shared {
    open: Arc<OpenBatch<Appended>>,
    files: Arc<FileTable>,
    state: RaftState,
    recent: Mutex<Recent>,
    /// The last purged log id (qlog numbering) and its leader.
    purged: Mutex<Option<(LogId, u64)>>,
    syncer: Mutex<Background>,
    /// The last qlog index fdatasynced here.
    durable: tokio::sync::watch::Sender<u64>,
    /// Why the log could not be written, once it could not.
    failed: Mutex<Option<String>>,
    committed: Committed,
}

/// How the log's syncer runs: on a thread of its own, or stepped by the
/// caller (`RaftLog::stepped`).
enum Background {
    Thread(Option<JoinHandle<()>>),
    Stepped(Syncer<Appended>),
}

/// The entries appended and not yet both durable and applied, by qlog
/// index, as openraft gave them (a voided one as the blank it was stored
/// as); and the indexes of the voided ones, until the state machine answers
/// them.
#[derive(Default)]
struct Recent {
    entries: BTreeMap<u64, RaftEntry>,
    durable: u64,
    applied: u64,
    voided: BTreeSet<u64>,
}

impl Recent {
    fn forget_settled(&mut self) {
        let settled = self.durable.min(self.applied);
        self.entries = self.entries.split_off(&(settled + 1));
    }
}

fn io_error(e: RaftStateError) -> io::Error {
    io::Error::other(e.to_string())
}

impl RaftLog {
    /// The log over `writer` (as recovery left it, holding every entry
    /// after the purge watermark), whose vote, committed id and purge
    /// watermark are kept in `state`; starts its syncer.
    pub fn start(
        writer: QlogWriter,
        files: Arc<FileTable>,
        state: RaftState,
        metrics: Arc<Metrics>,
        ledger: Option<Arc<SyncLedger>>,
    ) -> io::Result<Self> {
        Self::open(writer, files, state, metrics, ledger, false)
    }

    /// As `start`, with no threads: the caller makes what is staged durable
    /// (`sync_staged`) and writes the committed id (`save_committed_now`)
    /// when it chooses. The cluster simulator runs every node on one thread
    /// this way, in the order its seed decides.
    pub fn stepped(writer: QlogWriter, files: Arc<FileTable>, state: RaftState) -> io::Result<Self> {
        Self::open(writer, files, state, Arc::new(Metrics::default()), None, true)
    }

    fn open(
        writer: QlogWriter,
        files: Arc<FileTable>,
        state: RaftState,
        metrics: Arc<Metrics>,
        ledger: Option<Arc<SyncLedger>>,
        stepped: bool,
    ) -> io::Result<Self> {
        let purged = state.purged().map_err(io_error)?;
        let saved = state.committed().map_err(io_error)?;
        let committed =
            if stepped { Committed::stepped(state.clone(), saved) } else { Committed::start(state.clone(), saved) };
        // openraft purges this log itself: nothing else moves its watermark.
        let open = Arc::new(OpenBatch::new(writer, Arc::new(AtomicU64::new(0))));
        // What recovery left in the log is durable.
        let (durable, _) = tokio::sync::watch::channel(open.bounds().0);
        let shared = Arc::new_cyclic(|weak: &std::sync::Weak<Shared>| {
            let (weak, failing) = (weak.clone(), weak.clone());
            let on_durable = Box::new(move |batch: crate::replicate::batch::Batch<Appended>| {
                let Some(shared) = weak.upgrade() else { return false };
                let last = batch.items.iter().filter_map(|a| a.entries.last()).map(|e| e.id.index).max();
                if let Some(last) = last {
                    let mut recent = shared.recent.lock().expect("recent entries lock");
                    recent.durable = recent.durable.max(last);
                    recent.forget_settled();
                    shared.durable.send_if_modified(|d| std::mem::replace(d, (*d).max(last)) < last);
                }
                for appended in batch.items {
                    match appended.flushed {
                        Flushed::Raft(flushed) => flushed.io_completed(Ok(())),
                        Flushed::Boot(done) => {
                            let _ = done.send(());
                        }
                    }
                }
                true
            });
            let syncer = Syncer { files: files.clone(), metrics, ledger, open: open.clone(), on_durable };
            let syncer = if stepped {
                Background::Stepped(syncer)
            } else {
                // A cluster node whose log cannot be written (a full
                // volume) stops, and its process stays up: the other nodes
                // go on, and /health says why (recovery.md, "A disk is full").
                Background::Thread(Some(spawn("raft syncer", move || {
                    syncer.run_or(|e| {
                        let why = format!("raft log write failed: {e}");
                        tracing::error!("{why}; this node stops taking part in the cluster until it restarts");
                        if let Some(shared) = failing.upgrade() {
                            *shared.failed.lock().expect("failure lock") = Some(why);
                        }
                    })
                })))
            };
            Shared {
                open,
                files,
                state,
                recent: Mutex::default(),
                purged: Mutex::new(purged),
                syncer: Mutex::new(syncer),
                committed,
                durable,
                failed: Mutex::default(),
            }
        });
        Ok(Self { shared })
    }

    /// Where the records of qlog entry `index` sit, while the log holds it.
    pub fn locations(&self, index: u64) -> Option<EntryLocations> {
        self.shared.open.locations(index)
    }

    /// Why this log could not be written, once it could not: the node has
    /// stopped (`replicator.rs`).
    pub fn failure(&self) -> Option<String> {
        self.shared.failed.lock().expect("failure lock").clone()
    }

    /// Resolves once qlog entry `index` is fdatasynced here. openraft
    /// commits an entry once a quorum holds it, which the leader may not be
    /// part of yet: its records are then still staged, and a read of what
    /// applying it indexes would find nothing at its position (found by the
    /// cluster simulator, seed 1). So apply waits for this first.
    pub async fn durable_through(&self, index: u64) {
        // Almost always so by the time apply asks: no lock, no waiter.
        if *self.shared.durable.borrow() >= index {
            return;
        }
        if self.shared.open.locations(index).is_none() {
            // Not an entry of this log (openraft's storage suite applies
            // entries it never appended): nothing to wait for.
            return;
        }
        let mut durable = self.shared.durable.subscribe();
        // The sender lives as long as the log; a stop ends the wait.
        let _ = durable.wait_for(|d| *d >= index).await;
    }

    /// The state machine applied through qlog index `index`: the entries up
    /// to it, once durable too, are read from the qlog from now on. Answers
    /// whether the entry at `index` was voided.
    pub fn applied(&self, index: u64) -> bool {
        let durable = *self.shared.durable.borrow();
        // (An entry the log never held, as openraft's storage suite applies,
        // has nothing to be durable.)
        assert!(
            index <= durable || self.shared.open.locations(index).is_none(),
            "invariant broken: entry {index} was applied before it was durable in this node's log (durable through {durable})"
        );
        let mut recent = self.shared.recent.lock().expect("recent entries lock");
        recent.applied = recent.applied.max(index);
        recent.forget_settled();
        recent.voided.remove(&index)
    }

    /// The last entry the log holds (or its purge watermark), and its leader.
    pub fn last(&self) -> Option<(LogId, u64)> {
        self.last_log_id().map(|id| to_qlog(&id))
    }

    /// Appends `entry`, the next after `last`, and waits until it is
    /// durable: for what a boot writes before openraft starts (a forced
    /// recovery's membership, `force_recover.rs`).
    pub fn append_before_start(&self, entry: Entry) -> io::Result<()> {
        let (done, durable) = std::sync::mpsc::channel();
        self.shared.open.start_after(entry.id.index - 1);
        self.shared.open.add(vec![Appended { entries: vec![entry], flushed: Flushed::Boot(done) }]);
        durable.recv().map_err(|_| io::Error::other("the log stopped before the entry was durable"))
    }

    /// As [`RaftLog::append_before_start`], for a caller on a runtime (the
    /// cluster simulator steps the syncer on the same thread): the wait is
    /// for the log's durable point, and a log that fails ends it with the
    /// failure.
    pub async fn append_before_launch(&self, entry: Entry) -> io::Result<()> {
        let index = entry.id.index;
        // Nobody waits on this one: the durable point is waited for instead.
        let (done, _) = std::sync::mpsc::channel();
        self.shared.open.start_after(index - 1);
        self.shared.open.add(vec![Appended { entries: vec![entry], flushed: Flushed::Boot(done) }]);
        self.durable_through(index).await;
        match self.failure() {
            Some(why) => Err(io::Error::other(why)),
            None => Ok(()),
        }
    }

    /// The vote last saved, as openraft reads it at its start.
    pub fn saved_vote(&self) -> io::Result<Option<Vote>> {
        self.shared.state.vote().map_err(io_error)
    }

    /// Drains what is staged, then stops the syncer.
    pub fn stop(&self) {
        self.shared.open.close();
        if let Background::Thread(t) = &mut *self.shared.syncer.lock().expect("syncer lock") {
            if let Some(t) = t.take() {
                let _ = t.join();
            }
        }
        self.shared.committed.stop();
    }

    /// A stepped log's syncer step: writes and fdatasyncs what is staged,
    /// log after log on this thread, then tells openraft; answers whether
    /// anything was. A failed write or fdatasync is answered (where the
    /// syncer's thread ends the process).
    pub fn sync_staged(&self) -> io::Result<bool> {
        let mut syncer = self.shared.syncer.lock().expect("syncer lock");
        let Background::Stepped(syncer) = &mut *syncer else {
            panic!("invariant broken: sync_staged on a log whose syncer runs on its own thread")
        };
        match self.shared.open.try_take() {
            Some(batch) => syncer.sync(batch, true).map(|_| true),
            None => Ok(false),
        }
    }

    /// A stepped log's committed id step: writes the newest one, as the
    /// committed thread does every 100 ms.
    pub fn save_committed_now(&self) -> io::Result<()> {
        self.shared.committed.save_newest().map_err(io_error)
    }

    fn purged_index(&self) -> u64 {
        self.shared.purged.lock().expect("purge lock").map_or(0, |(id, _)| id.index)
    }

    /// Qlog entry `index`: from memory while it may still be staged, then
    /// from its records.
    fn entry(&self, index: u64) -> io::Result<Option<RaftEntry>> {
        if let Some(e) = self.shared.recent.lock().expect("recent entries lock").entries.get(&index) {
            return Ok(Some(e.clone()));
        }
        let Some(at) = self.shared.open.locations(index) else { return Ok(None) };
        let entry = read_entry(&self.shared.files, &at).map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Some(to_raft_entry(entry)))
    }

    /// The raft log id of the last entry the log holds, or of its purge
    /// watermark when it holds none.
    fn last_log_id(&self) -> Option<RaftLogId> {
        let purged = *self.shared.purged.lock().expect("purge lock");
        let (last, _) = self.shared.open.bounds();
        if last <= purged.map_or(0, |(id, _)| id.index) {
            return purged.and_then(|(id, leader)| to_raft(id, leader));
        }
        if let Some(e) = self.shared.recent.lock().expect("recent entries lock").entries.get(&last) {
            return Some(e.log_id);
        }
        self.shared.open.locations(last).and_then(|at| to_raft(at.id, at.leader))
    }
}

/// The qlog indexes of a range of raft indexes.
fn qlog_range(range: impl RangeBounds<u64>) -> (u64, Option<u64>) {
    let start = match range.start_bound() {
        Bound::Included(i) => i + 1,
        Bound::Excluded(i) => i + 2,
        Bound::Unbounded => 1,
    };
    let end = match range.end_bound() {
        Bound::Included(i) => Some(i + 1),
        Bound::Excluded(i) => Some(*i),
        Bound::Unbounded => None,
    };
    (start, end)
}

impl RaftLogReader<Queen> for RaftLog {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<RaftEntry>, io::Error> {
        let (start, end) = qlog_range(range);
        // The log may start past qlog index 1: after a purge, and where
        // openraft's first append came later than raft index 0.
        let (last, held_after) = self.shared.open.bounds();
        let end = end.map_or(last, |e| e.min(last));
        let start = start.max(self.purged_index().max(held_after) + 1);
        let mut out = Vec::with_capacity(end.saturating_sub(start) as usize + 1);
        for index in start..=end {
            match self.entry(index)? {
                Some(e) => out.push(e),
                None => break,
            }
        }
        Ok(out)
    }

    async fn read_vote(&mut self) -> Result<Option<RaftVote>, io::Error> {
        let vote = self.shared.state.vote().map_err(io_error)?;
        Ok(vote.map(
            |v| {
                if v.committed {
                    RaftVote::new_committed(v.term, v.node)
                } else {
                    RaftVote::new(v.term, v.node)
                }
            },
        ))
    }
}

impl RaftLogStorage<Queen> for RaftLog {
    type LogReader = RaftLog;

    async fn get_log_state(&mut self) -> Result<LogState<Queen>, io::Error> {
        let purged = *self.shared.purged.lock().expect("purge lock");
        Ok(LogState {
            last_purged_log_id: purged.and_then(|(id, leader)| to_raft(id, leader)),
            last_log_id: self.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &RaftVote) -> Result<(), io::Error> {
        let v = Vote { term: vote.leader_id.term, node: vote.leader_id.node_id, committed: vote.committed };
        self.shared.state.save_vote(v).map_err(io_error)
    }

    async fn save_committed(&mut self, committed: Option<RaftLogId>) -> Result<(), io::Error> {
        let Some(c) = committed else { return Ok(()) };
        let (id, leader) = to_qlog(&c);
        self.shared.committed.set(id, leader);
        Ok(())
    }

    /// The saved committed id, no further than the log reaches: a follower
    /// learns its commit index from the leader, for entries it has appended
    /// and not yet fdatasynced, so the id saved before a power cut may name
    /// entries the cut took (the cluster simulator's seed 184, whose node
    /// then refused to boot). What the log holds is committed as far as it
    /// goes; the leader sends the rest again.
    async fn read_committed(&mut self) -> Result<Option<RaftLogId>, io::Error> {
        let saved = self.shared.committed.get().and_then(|(id, leader)| to_raft(id, leader));
        Ok(match (saved, self.last_log_id()) {
            (Some(saved), Some(last)) if last.index < saved.index => Some(last),
            (Some(_), None) => None,
            (saved, _) => saved,
        })
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<Queen>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = RaftEntry> + Send,
        I::IntoIter: Send,
    {
        let mut stored = Vec::new();
        {
            let mut recent = self.shared.recent.lock().expect("recent entries lock");
            for e in entries {
                let (entry, voided) = to_qlog_entry(&e);
                if voided {
                    tracing::warn!(entry = %entry.id, "an entry planned under another log id was voided: the leadership that planned it ended before raft appended it");
                    recent.voided.insert(entry.id.index);
                }
                recent.entries.insert(entry.id.index, to_raft_entry(entry.clone()));
                stored.push(entry);
            }
        }
        let Some(first) = stored.first() else {
            callback.io_completed(Ok(()));
            return Ok(());
        };
        // openraft starts a log after a snapshot, or after a purge past its
        // end, at the index that follows: nothing lies between.
        self.shared.open.start_after(first.id.index - 1);
        self.shared.open.add(vec![Appended { entries: stored, flushed: Flushed::Raft(callback) }]);
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<RaftLogId>) -> Result<(), io::Error> {
        let keep = last_log_id.next_index();
        {
            let mut recent = self.shared.recent.lock().expect("recent entries lock");
            recent.entries.split_off(&(keep + 1));
            recent.durable = recent.durable.min(keep);
            self.shared.durable.send_if_modified(|d| std::mem::replace(d, (*d).min(keep)) > keep);
            recent.voided.retain(|i| *i <= keep);
        }
        // The cut waits until nothing staged is unsynced: a stepped log
        // syncs it here, as no other thread will.
        if matches!(*self.shared.syncer.lock().expect("syncer lock"), Background::Stepped(_)) {
            while self.sync_staged()? {}
        }
        self.shared.open.truncate_after(keep, &self.shared.files)?;
        Ok(())
    }

    async fn purge(&mut self, log_id: RaftLogId) -> Result<(), io::Error> {
        let (id, leader) = to_qlog(&log_id);
        self.shared.state.save_purged(id, leader).map_err(io_error)?;
        *self.shared.purged.lock().expect("purge lock") = Some((id, leader));
        {
            let mut recent = self.shared.recent.lock().expect("recent entries lock");
            recent.entries = recent.entries.split_off(&(id.index + 1));
        }
        self.shared.open.purge_through(id.index);
        Ok(())
    }
}
