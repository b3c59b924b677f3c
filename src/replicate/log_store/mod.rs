//! The log store: the qlog as a log of entries, by index, shaped on
//! openraft's `RaftLogStorage` and its log reader.
//!
//! - append: the open batch stages each planned entry's records
//!   (`open_batch.rs`), and the syncer writes and fdatasyncs them and only
//!   then calls back with the batch (`syncer.rs`): group commit, whatever
//!   arrives during one fdatasync shares the next;
//! - cut: `QlogWriter::truncate_after`, at runtime as at boot;
//! - read by index: `entries` rebuilds entries from their records, the way a
//!   raft leader sends them to a follower that is behind and the way
//!   recovery replays them; every record read is verified against its
//!   checksum, and must name the entry it was found for;
//! - purge: a watermark (`QlogWriter::purge_through`), below which the log
//!   forgets where entries sit; the qlog files stay the message store;
//! - the vote and the committed index: `raft_state.rs`.

pub(crate) mod open_batch;
pub mod raft_state;
pub(crate) mod syncer;

use crate::log_id::LogId;
use crate::planner::effect::{Entry, EntryBody};
use crate::qlog::entry_index::EntryLocations;
use crate::qlog::entry_record::{EntryRecord, Stub};
use crate::qlog::files::{FileTable, ReadError};
use crate::qlog::message_record::MessageRecord;
use crate::qlog::writer::QlogWriter;
use std::ops::RangeInclusive;

#[derive(Debug, thiserror::Error)]
pub enum LogReadError {
    #[error("entry {index} is at or below the log's purge watermark {purged}: the checkpoint holds it, not the log")]
    Purged { index: u64, purged: u64 },
    #[error("entry {index} is past the log's last entry {last}")]
    PastEnd { index: u64, last: u64 },
    #[error("reading entry {index}: {source}")]
    Read { index: u64, source: ReadError },
    #[error("entry {index}: {why}")]
    Damaged { index: u64, why: String },
}

/// The entries `range`, each rebuilt from its records.
pub fn entries(writer: &QlogWriter, files: &FileTable, range: RangeInclusive<u64>) -> Result<Vec<Entry>, LogReadError> {
    range.map(|index| entry(writer, files, index)).collect()
}

/// The last entry the log holds (the purge watermark's when it holds none).
pub fn last_index(writer: &QlogWriter) -> u64 {
    writer.index().last_index()
}

fn entry(writer: &QlogWriter, files: &FileTable, index: u64) -> Result<Entry, LogReadError> {
    let log = writer.index();
    let Some(at) = log.get(index) else {
        return Err(if index <= log.purged() {
            LogReadError::Purged { index, purged: log.purged() }
        } else {
            LogReadError::PastEnd { index, last: log.last_index() }
        });
    };
    read_entry(files, at)
}

/// The entry whose records sit at `at`, rebuilt from them.
pub fn read_entry(files: &FileTable, at: &EntryLocations) -> Result<Entry, LogReadError> {
    let index = at.id.index;
    let read = |loc| files.read_body(loc).map_err(|source| LogReadError::Read { index, source });
    let damaged = |why: String| LogReadError::Damaged { index, why };
    let record = EntryRecord::decode(&read(at.entry)?).map_err(|e| damaged(e.to_string()))?;
    expect_id(record.id, at.id, "entry record").map_err(damaged)?;
    for stub in &at.stubs {
        let stub = Stub::decode(&read(*stub)?).map_err(|e| damaged(e.to_string()))?;
        expect_id(stub.id, at.id, "stub").map_err(damaged)?;
    }
    let body = EntryBody::decode(&record.effects).map_err(|e| damaged(e.to_string()))?;
    let mut messages = Vec::with_capacity(at.messages.len());
    for loc in &at.messages {
        let m = MessageRecord::decode_shared(&read(*loc)?).map_err(|e| damaged(e.to_string()))?;
        expect_id(m.id, at.id, "message record").map_err(damaged)?;
        messages.push(m);
    }
    Ok(Entry { id: record.id, leader: record.leader, body, messages })
}

fn expect_id(found: LogId, wanted: LogId, what: &str) -> Result<(), String> {
    if found == wanted {
        Ok(())
    } else {
        Err(format!("its {what} names entry {found} (a record of another entry where the index points)"))
    }
}
