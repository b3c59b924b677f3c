//! Planning timers: schedule, reschedule and cancel, and the fire that turns
//! a due timer into a pushed message. The fire and the timer's removal are
//! one entry, so a timer fires at most once, never before its time, and
//! never after a cancel that reported removing it: both are decided here, in
//! order.

use super::effect::Effect;
use super::items::PushItem;
use super::overlay::Overlay;
use super::push;
use crate::log_id::LogId;
use crate::message::Message;
use crate::qlog::message_record::MessageRecord;
use crate::store::rows::TimerRow;
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimerVerb {
    Schedule,
    Reschedule,
    Cancel,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TimerOp {
    pub verb: TimerVerb,
    pub queue: String,
    pub key: String,
    pub partition: String,
    pub delay_ms: i64,
    /// For a schedule, the fired message's transactionId; for a cancel, the
    /// timer it must be (none: whichever is pending).
    pub txn: Option<String>,
    pub payload: Vec<u8>,
    /// The payload is sealed for an encrypted queue (`encryption.rs`), its
    /// transactionId already chosen as `txn`.
    pub sealed: bool,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum TimerResult {
    Scheduled {
        rescheduled: bool,
        txn: String,
        message_id: String,
        deliver_at_us: i64,
    },
    Cancelled {
        txn: String,
    },
    /// Not pending (never scheduled, cancelled, or already fired).
    Absent,
}

/// The store key of a queue's timer.
pub fn timer_key(queue: &str, key: &str) -> String {
    format!("{queue}\0{key}")
}

/// Plans timer operations in entry `id`: the ids a schedule gives out
/// (its message's, and its transactionId when none was given) derive from it.
pub fn plan_timers(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    now_us: i64,
    ops: &[TimerOp],
) -> (Vec<Effect>, Vec<TimerResult>) {
    let mut effects = Vec::new();
    let mut results = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        // Ordinal 0 is a pop's lease; each op takes two after it.
        let ordinal = 1 + 2 * i as u32;
        let key = timer_key(&op.queue, &op.key);
        let current = overlay.timer(store, &key);
        let result = match op.verb {
            TimerVerb::Schedule | TimerVerb::Reschedule => {
                let txn = op.txn.clone().unwrap_or_else(|| id.derived_uuid(ordinal));
                let row = TimerRow {
                    partition: op.partition.clone(),
                    deliver_at_us: now_us.saturating_add(op.delay_ms.saturating_mul(1000)),
                    txn: txn.clone(),
                    message_id: id.derived_uuid(ordinal + 1),
                    payload: op.payload.clone(),
                    sealed: op.sealed,
                    created_us: current.as_ref().map_or(now_us, |c| c.created_us),
                    updated_us: now_us,
                };
                let result = TimerResult::Scheduled {
                    rescheduled: current.is_some(),
                    txn,
                    message_id: row.message_id.clone(),
                    deliver_at_us: row.deliver_at_us,
                };
                overlay.put_timer(key.clone(), Some(row.clone()));
                effects.push(Effect::TimerSet { key, row });
                result
            }
            TimerVerb::Cancel => match current {
                Some(row) if op.txn.as_ref().is_none_or(|t| *t == row.txn) => {
                    overlay.put_timer(key.clone(), None);
                    effects.push(Effect::TimerDelete { key });
                    TimerResult::Cancelled { txn: row.txn }
                }
                _ => TimerResult::Absent,
            },
        };
        results.push(result);
    }
    (effects, results)
}

/// Fires up to `max` due timers: each pushes its message (a transactionId
/// already in the partition pushes nothing) and is removed, in one entry.
pub fn plan_fire(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    now_us: i64,
    max: usize,
) -> (Vec<Effect>, Vec<MessageRecord>, usize) {
    let due: Vec<(String, TimerRow)> = store
        .timers_due(now_us, max)
        .into_iter()
        .filter_map(|k| overlay.timer(store, &k).filter(|r| r.deliver_at_us <= now_us).map(|r| (k, r)))
        .collect();
    let mut items = Vec::with_capacity(due.len());
    let mut effects = Vec::new();
    for (key, row) in &due {
        let queue = key.split('\0').next().unwrap_or_default().to_string();
        let message = Message { encrypted: row.sealed, ..Message::new(row.txn.clone(), row.payload.clone()) };
        // Compression is the storing node's choice, which the planner does
        // not know: a fired payload is stored raw.
        items.push(PushItem::new(queue, row.partition.clone(), &message, 0));
        overlay.put_timer(key.clone(), None);
        effects.push(Effect::TimerDelete { key: key.clone() });
    }
    let pushed = push::plan_push(store, overlay, id, now_us, items);
    let mut all = pushed.effects;
    all.extend(effects);
    (all, pushed.messages, due.len())
}
