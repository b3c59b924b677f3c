//! The present-in-all rule: an entry that touches several logs replays only
//! if every copy is present and identical: the whole entry record in the
//! lowest touched log, a stub naming it in every other, and the message
//! record of every append. This is where transactions get their atomicity on
//! disk: an entry torn by a crash is cut from every log and leaves no gap.

use super::effect::{Effect, EntryBody};
use crate::qlog::entry_record::{EntryRecord, Stub};
use crate::qlog::layout::Layout;
use crate::qlog::message_record::MessageSpan;

/// Every copy of one entry that the logs hold.
#[derive(Debug, Default)]
pub struct Copies {
    /// (log, entry body) for every whole entry record found.
    pub entries: Vec<(u64, Vec<u8>)>,
    pub stubs: Vec<(u64, Stub)>,
    /// (log, span) of every message record found.
    pub messages: Vec<(u64, MessageSpan)>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every copy is present and identical: the entry replays.
    Complete,
    /// A copy is missing: the group commit that wrote it never finished, so
    /// the entry was never acknowledged and is cut.
    Incomplete,
    /// Copies that are present disagree: damage, not a crash.
    Disagree(String),
}

pub fn judge(copies: &Copies, layout: &Layout) -> Verdict {
    let [(home, body)] = copies.entries.as_slice() else {
        return if copies.entries.len() > 1 {
            Verdict::Disagree(format!("{} whole entry records", copies.entries.len()))
        } else {
            Verdict::Incomplete
        };
    };
    let Ok(record) = EntryRecord::decode(body) else {
        return Verdict::Disagree("the entry record does not decode".into());
    };
    if record.touched.first() != Some(home) {
        return Verdict::Disagree(format!("the entry record sits in log {home}, not its lowest touched log"));
    }
    let digest = EntryRecord::digest(body);
    for stub in &copies.stubs {
        let (log, s) = stub;
        let expected_ordinal = record.touched.iter().position(|l| l == log);
        if s.digest != digest
            || s.home != *home
            || s.copies as usize != record.touched.len()
            || expected_ordinal != Some(s.ordinal as usize)
        {
            return Verdict::Disagree(format!("the stub in log {log} does not match the entry record in log {home}"));
        }
    }
    for log in &record.touched[1..] {
        if !copies.stubs.iter().any(|(l, _)| l == log) {
            return Verdict::Incomplete;
        }
    }
    let Ok(entry) = EntryBody::decode(&record.effects) else {
        return Verdict::Disagree("the entry's effects do not decode".into());
    };
    for effect in &entry.effects {
        if let Effect::Append { queue, partition, first_offset, count } = effect {
            let span = MessageSpan { queue: *queue, partition: *partition, first_offset: *first_offset, count: *count };
            if !copies.messages.iter().any(|(log, m)| *m == span && *log == layout.log_of(*queue)) {
                return Verdict::Incomplete;
            }
        }
    }
    Verdict::Complete
}
