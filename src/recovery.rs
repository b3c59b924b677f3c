//! Crash recovery, steps 2 to 4 of storage.md (step 1, reopening the store at
//! its checkpoint, happens before): cut torn tails, merge the entry records
//! of every log by index, replay the gapless run of complete entries after
//! the checkpoint, and cut the first incomplete entry and everything after it
//! from every log. Damage that is not a torn tail refuses the boot.
//!
//! Under raft, durable is not committed: the replay stops at the committed
//! index the log store saved, and the complete entries after it stay in the
//! logs, indexed, for the leader to commit or cut. On one node every durable
//! entry is committed, and the replay goes to the end of the run.

use crate::log_id::LogId;
use crate::planner::apply::apply;
use crate::planner::effect::{Effect, Entry, EntryBody};
use crate::planner::txn::{judge, Copies, Verdict};
use crate::qlog::boot_scan::{scan_logs, BootScanError, LogScan};
use crate::qlog::entry_index::{EntryIndex, EntryLocations};
use crate::qlog::entry_record::{EntryRecord, Stub};
use crate::qlog::files::{FileTable, Location};
use crate::qlog::layout::Layout;
use crate::qlog::message_record::MessageRecord;
use crate::qlog::queue_log::QueueLog;
use crate::qlog::record::RecordKind;
use crate::qlog::segment::index_path;
use crate::qlog::segment::log_dir;
use crate::qlog::sync_ledger::SyncLedger;
use crate::store::locator::Span;
use crate::store::Store;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error(transparent)]
    Scan(#[from] BootScanError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("active qlog file {path} holds a damaged record at byte {pos} followed by a verified record (entry {index}) the store already counts as durable: this is corruption, not a torn tail")]
    DamageBeforeDurable { path: PathBuf, pos: u64, index: u64 },
    #[error(
        "the queue logs under {path} end at entry {found}, before entry {durable} that the store recorded as durable"
    )]
    LogsEndBeforeDurable { path: PathBuf, durable: u64, found: u64 },
    #[error("queue log {path} ends at offset {found} of partition {partition} of queue {queue}, before offset {durable} that the store recorded as durable")]
    PartitionEndsBeforeDurable { path: PathBuf, queue: String, partition: String, found: u64, durable: u64 },
    #[error("the copies of entry {index} disagree across logs ({why}); logs: {logs}")]
    CopiesDisagree { index: u64, why: String, logs: String },
    #[error("qlog record at byte {pos} of {path} does not decode: {why}")]
    Undecodable { path: PathBuf, pos: u64, why: String },
}

pub struct Recovered {
    pub logs: Vec<QueueLog>,
    /// Where the records of every entry after the checkpoint sit.
    pub index: EntryIndex,
    /// The last entry in the logs after recovery: the planner continues after it.
    pub last: LogId,
    /// Entries applied by the replay.
    pub replayed: u64,
    /// Entries cut because a copy was missing.
    pub cut: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecoveryError {
    let path = path.to_path_buf();
    move |source| RecoveryError::Io { path, source }
}

/// How a boot applies an entry in its replay: false when apply refuses it,
/// and the replay stops before it (a cluster's guarded apply: openraft
/// meets the entry again, and the node reports it).
pub type ReplayApply<'a> = &'a dyn Fn(&mut Store, &Entry, &[Location]) -> bool;

/// How far a boot replays, and which entries the log holds after it.
#[derive(Clone, Copy, Default)]
pub struct Replay<'a> {
    /// Replay through it (`None`: every complete entry, as on one node).
    pub committed: Option<u64>,
    /// Hold the entries from it on as entries, the checkpointed ones too
    /// (`None`: only those after the checkpoint). A raft log holds every
    /// entry openraft has not purged: a follower behind is sent them.
    pub hold_from: Option<u64>,
    /// How to apply (`None`: the planner's apply, which panics on a broken
    /// invariant).
    pub apply: Option<ReplayApply<'a>>,
}

/// Recovers the logs under `root` into `store`, replaying and holding
/// entries as `replay` says.
pub fn recover(
    store: &mut Store,
    root: &Path,
    layout: &Layout,
    files: &FileTable,
    (ledger, replay): (Option<&SyncLedger>, Replay),
) -> Result<Recovered, RecoveryError> {
    let scans = scan_logs(files.storage(), root)?;
    let durable = store.applied.index;
    let committed = replay.committed;
    // The first entry the index holds.
    let hold_from = replay.hold_from.map_or(durable + 1, |h| h.clamp(1, durable + 1));
    // The files are opened as records are read (`FileTable`), not all at
    // once: a node with more logs than descriptors still boots.
    for scan in &scans {
        refuse_damage_before_durable(scan, durable)?;
    }

    // Merge every log's records after the checkpoint by index, and note
    // where each sits.
    let mut copies: BTreeMap<u64, Copies> = BTreeMap::new();
    let mut found: BTreeMap<u64, Found> = BTreeMap::new();
    let mut last_seen = LogId::default();
    for scan in &scans {
        for seg in &scan.segments {
            for row in &seg.rows {
                last_seen = last_seen.max(row.id);
                if row.id.index < hold_from {
                    continue;
                }
                let c = copies.entry(row.id.index).or_default();
                let at = found.entry(row.id.index).or_default();
                let loc = Location { log: scan.id, segment: seg.no, pos: row.pos, frame_len: row.frame_len };
                match row.kind {
                    RecordKind::Message => {
                        let span = row.span.expect("message rows carry a span");
                        c.messages.push((scan.id, span));
                        at.messages.insert((row.id, span.queue, span.partition, span.first_offset), loc);
                    }
                    RecordKind::Entry | RecordKind::EntryFormat3 => {
                        c.entries.push((scan.id, read(files, loc, &seg.path)?.to_vec()));
                        at.entry = Some(loc);
                    }
                    RecordKind::Stub => {
                        let body = read(files, loc, &seg.path)?;
                        let stub = Stub::decode(&body).map_err(|e| undecodable(&seg.path, row.pos, e))?;
                        c.stubs.push((scan.id, stub));
                        at.stubs.push(loc);
                    }
                }
            }
        }
    }
    if durable > 0 && last_seen.index < durable {
        return Err(RecoveryError::LogsEndBeforeDurable { path: root.to_path_buf(), durable, found: last_seen.index });
    }

    // The gapless run of complete entries after the checkpoint.
    let mut keep = durable;
    for (index, c) in copies.range(durable + 1..) {
        if *index != keep + 1 {
            break;
        }
        match judge(c, layout) {
            Verdict::Complete => keep = *index,
            Verdict::Incomplete => break,
            Verdict::Disagree(why) => {
                let mut logs: Vec<u64> = c.entries.iter().map(|e| e.0).chain(c.stubs.iter().map(|s| s.0)).collect();
                logs.sort_unstable();
                let logs = logs.iter().map(|l| log_dir(root, *l).display().to_string()).collect::<Vec<_>>().join(", ");
                return Err(RecoveryError::CopiesDisagree { index: *index, why, logs });
            }
        }
    }
    let cut = copies.range(keep + 1..).count() as u64;

    // Messages applied before the checkpoint only need their locations.
    for scan in &scans {
        for seg in &scan.segments {
            for row in seg.rows.iter().filter(|r| r.id.index <= durable && r.kind == RecordKind::Message) {
                let span = row.span.expect("message rows carry a span");
                let at = Location { log: scan.id, segment: seg.no, pos: row.pos, frame_len: row.frame_len };
                store.locator.insert(
                    span.queue,
                    span.partition,
                    Span { first_offset: span.first_offset, count: span.count, timestamp_us: row.timestamp_us, at },
                );
            }
        }
    }

    // Replay through the committed index; index every entry kept.
    let replay_through = committed.map_or(keep, |c| c.min(keep));
    let mut index = EntryIndex::after(hold_from - 1);
    let mut last = store.applied;
    let mut refused = false;
    for i in hold_from..=keep {
        // An entry through the checkpoint whose records are gone (reclaim
        // freed them) ends what the log can hold before it.
        if i <= durable && found.get(&i).is_none_or(|at| at.entry.is_none()) {
            index = EntryIndex::after(i);
            continue;
        }
        let at = &found[&i];
        let (entry, messages) = rebuild(&copies[&i], at, files, root)?;
        if i <= replay_through && !refused {
            match replay.apply {
                Some(guarded) => refused = !guarded(store, &entry, &messages),
                None => {
                    apply(store, &entry, &messages);
                }
            }
        }
        let entry_at = at.entry.expect("judge found the entry record");
        last = entry.id;
        index.append(EntryLocations {
            id: entry.id,
            leader: entry.leader,
            entry: entry_at,
            stubs: at.stubs.clone(),
            messages,
        });
    }

    check_partitions_reach_durable(store, root, layout)?;
    // Below `txns_start` nothing is read; reclaim may free those files later.
    let watermarks: Vec<_> = store.partitions.iter().map(|(k, row)| (*k, row.txns_start)).collect();
    for ((q, p), txns_start) in watermarks {
        store.locator.remove_below(q, p, txns_start);
    }
    let logs =
        scans.into_iter().map(|scan| cut_and_resume(scan, keep, files, ledger)).collect::<Result<Vec<_>, _>>()?;
    files.storage().sync_dir(root).map_err(io(root))?;
    Ok(Recovered { logs, index, last, replayed: store.applied.index.saturating_sub(durable), cut })
}

fn undecodable(path: &Path, pos: u64, e: impl std::fmt::Display) -> RecoveryError {
    RecoveryError::Undecodable { path: path.to_path_buf(), pos, why: e.to_string() }
}

fn read(files: &FileTable, loc: Location, path: &Path) -> Result<bytes::Bytes, RecoveryError> {
    files.read_body(loc).map_err(|e| undecodable(path, loc.pos, e))
}

fn refuse_damage_before_durable(scan: &LogScan, durable: u64) -> Result<(), RecoveryError> {
    let Some(damage) = &scan.active_damage else {
        return Ok(());
    };
    let active = scan.segments.last().expect("a log has an active file");
    match damage.verified_after.iter().find(|r| r.id.index <= durable) {
        Some(row) if damage.checksum_failed => {
            Err(RecoveryError::DamageBeforeDurable { path: active.path.clone(), pos: damage.pos, index: row.id.index })
        }
        _ => Ok(()),
    }
}

/// Where one entry's records were found.
#[derive(Default)]
struct Found {
    entry: Option<Location>,
    stubs: Vec<Location>,
    /// By (entry id, queue, partition, first offset): a lookup, not a walk
    /// of every row, so a replay costs the same per entry however long the
    /// logs it reads.
    messages: HashMap<(LogId, u64, u64, u64), Location>,
}

/// Reads an entry and its message records back into the form apply takes.
fn rebuild(c: &Copies, at: &Found, files: &FileTable, root: &Path) -> Result<(Entry, Vec<Location>), RecoveryError> {
    let (home, body) = &c.entries[0];
    let home_path = log_dir(root, *home);
    let record = EntryRecord::decode(body).map_err(|e| undecodable(&home_path, 0, e))?;
    let entry_body = EntryBody::decode(&record.effects).map_err(|e| undecodable(&home_path, 0, e))?;
    let mut messages = Vec::new();
    let mut locations = Vec::new();
    for effect in &entry_body.effects {
        let Effect::Append { queue, partition, first_offset, .. } = effect else {
            continue;
        };
        let loc = at.messages[&(record.id, *queue, *partition, *first_offset)];
        let path = files.path(loc.log, loc.segment);
        let body = read(files, loc, &path)?;
        messages.push(MessageRecord::decode_shared(&body).map_err(|e| undecodable(&path, loc.pos, e))?);
        locations.push(loc);
    }
    Ok((Entry { id: record.id, leader: record.leader, body: entry_body, messages }, locations))
}

fn check_partitions_reach_durable(store: &Store, root: &Path, layout: &Layout) -> Result<(), RecoveryError> {
    for ((q, p), row) in store.partitions.iter() {
        // Below `txns_start` reclaim may have freed files: nothing there is
        // owed to a reader.
        let found = store.locator.end(*q, *p).unwrap_or(row.log_start).max(row.txns_start);
        let starts_late = store.locator.start(*q, *p).is_some_and(|s| s > row.log_start);
        if found < row.next_offset || starts_late {
            return Err(RecoveryError::PartitionEndsBeforeDurable {
                path: log_dir(root, layout.log_of(*q)),
                queue: store.queue_name(*q).unwrap_or("?").to_string(),
                partition: row.name.clone(),
                found,
                durable: row.next_offset,
            });
        }
    }
    Ok(())
}

/// Cuts a log after entry `keep` (and any torn tail), then resumes writing it.
fn cut_and_resume(
    scan: LogScan,
    keep: u64,
    files: &FileTable,
    ledger: Option<&SyncLedger>,
) -> Result<QueueLog, RecoveryError> {
    let LogScan { id, dir, mut segments, active_damage } = scan;
    let first_cut = segments
        .iter()
        .enumerate()
        .find_map(|(i, seg)| seg.rows.iter().position(|r| r.id.index > keep).map(|j| (i, j)));
    let last = segments.len() - 1;
    let (cut_seg, cut_pos) = match first_cut {
        Some((i, j)) => (i, Some(segments[i].rows[j].pos)),
        None => (last, active_damage.map(|d| d.pos)),
    };
    let storage = files.storage();
    for seg in segments.drain(cut_seg + 1..) {
        files.remove(id, seg.no);
        storage.remove_file(&seg.path).map_err(io(&seg.path))?;
        let _ = storage.remove_file(&index_path(&dir, seg.no));
    }
    let active = segments.pop().expect("the cut keeps the segment it cuts in");
    let mut rows = active.rows;
    let mut len = active.len;
    if let Some(pos) = cut_pos {
        rows.retain(|r| r.pos < pos);
        let f = storage.open(&active.path, false).map_err(io(&active.path))?;
        f.truncate_durable(pos).map_err(io(&active.path))?;
        len = pos;
        if let Some(l) = ledger {
            l.record(&active.path, pos);
        }
        tracing::warn!(file = %active.path.display(), at = pos, "cut the qlog after the last complete entry");
    } else if len > 0 {
        // A process that died leaves what it wrote in the page cache, where
        // this boot just read and replayed it; it is durable only once
        // synced. Without this, entries written after this boot (into other
        // files) are answered while the ones they follow can still be lost
        // to a power cut, and the next boot cuts both. Sealed files were
        // synced before their roll. (Found by the simulator.)
        let f = storage.open(&active.path, false).map_err(io(&active.path))?;
        f.datasync().map_err(io(&active.path))?;
        if let Some(l) = ledger {
            l.record(&active.path, len);
        }
    }
    if cut_seg != last {
        let _ = storage.remove_file(&index_path(&dir, active.no));
        storage.sync_dir(&dir).map_err(io(&dir))?;
    }
    Ok(QueueLog::resume(id, dir, active.no, len, rows))
}
