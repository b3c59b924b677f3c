//! How a consumer group's cursor moves. Shared by apply and by the planner's
//! overlay, so that what the planner expects of a row is exactly what apply
//! will make of it.

use super::effect::Effect;
use crate::store::rows::{CursorRow, LeaseRow};

/// Marks `offset` done (acknowledged or dead-lettered): the committed offset
/// moves over every done offset it now touches, and a lease whose every
/// offset is done is released.
pub fn mark_done(cursor: &mut CursorRow, offset: u64) {
    cursor.failures.remove(&offset);
    if offset == cursor.committed {
        cursor.committed += 1;
        while cursor.done_above.remove(&cursor.committed) {
            cursor.committed += 1;
        }
    } else if offset > cursor.committed {
        cursor.done_above.insert(offset);
    }
    if cursor.lease.as_ref().is_some_and(|l| l.last < cursor.committed) {
        cursor.lease = None;
    }
}

/// Makes a done offset deliverable again (a retry out of the dead-letter
/// queue): the committed offset moves back to it and everything between
/// stays done, so the next pop delivers it and then catches up at once.
pub fn mark_undone(cursor: &mut CursorRow, offset: u64) {
    cursor.failures.remove(&offset);
    if offset < cursor.committed {
        cursor.done_above.extend(offset + 1..cursor.committed);
        cursor.committed = offset;
    } else {
        cursor.done_above.remove(&offset);
    }
}

pub fn is_done(cursor: &CursorRow, offset: u64) -> bool {
    offset < cursor.committed || cursor.done_above.contains(&offset)
}

/// A failed delivery: counted, the lease released (the partition goes back
/// to the pool) and the next delivery held until `not_before_us`.
pub fn fail(cursor: &mut CursorRow, offset: u64, not_before_us: i64) {
    *cursor.failures.entry(offset).or_default() += 1;
    cursor.lease = None;
    cursor.not_before_us = cursor.not_before_us.max(not_before_us);
}

/// A pop's claim: the lease is granted, or with `auto_ack` the offsets are
/// done at once.
pub fn deliver(cursor: &mut CursorRow, lease: &LeaseRow, auto_ack: bool, offsets: &[u64]) {
    if auto_ack {
        for o in offsets {
            mark_done(cursor, *o);
        }
    } else {
        cursor.lease = Some(lease.clone());
    }
}

/// Retention removed every offset below `log_start`: a cursor behind it
/// starts there and forgets what it knew of the offsets before it. A lease
/// wholly below it is released; one reaching above it is left to run out or
/// be acked.
pub fn skip_to(cursor: &mut CursorRow, log_start: u64) {
    if cursor.committed >= log_start {
        return;
    }
    cursor.committed = log_start;
    cursor.done_above = cursor.done_above.split_off(&log_start);
    cursor.failures = cursor.failures.split_off(&log_start);
    while cursor.done_above.remove(&cursor.committed) {
        cursor.committed += 1;
    }
    if cursor.lease.as_ref().is_some_and(|l| l.last < cursor.committed) {
        cursor.lease = None;
    }
}

/// Moves a cursor by one of the cursor effects; others leave it alone.
pub fn apply(cursor: &mut CursorRow, effect: &Effect) {
    match effect {
        Effect::Ack { offset, .. } | Effect::DeadLetter { offset, .. } => mark_done(cursor, *offset),
        Effect::Fail { offset, not_before_us, .. } => fail(cursor, *offset, *not_before_us),
        Effect::Redeliver { offset, .. } => mark_undone(cursor, *offset),
        Effect::LeaseExpired { .. } => {
            if let Some(l) = cursor.lease.take() {
                let held: Vec<u64> = (l.first..=l.last).filter(|o| !is_done(cursor, *o)).collect();
                for o in held {
                    *cursor.failures.entry(o).or_default() += 1;
                }
            }
        }
        Effect::ExtendLease { expires_us, .. } => {
            if let Some(l) = cursor.lease.as_mut() {
                l.expires_us = *expires_us;
            }
        }
        Effect::Deliver { lease, auto_ack, .. } => {
            let offsets: Vec<u64> = (lease.first..=lease.last).filter(|o| !is_done(cursor, *o)).collect();
            deliver(cursor, lease, *auto_ack, &offsets)
        }
        Effect::Retain { log_start, .. } => skip_to(cursor, *log_start),
        Effect::Release { offsets, .. } => {
            let undone: Vec<u64> = offsets.iter().copied().filter(|o| !is_done(cursor, *o)).collect();
            for o in undone {
                *cursor.failures.entry(o).or_default() += 1;
            }
        }
        _ => {}
    }
}

/// Up to `max` offsets not yet done, from the committed offset up to `end`.
pub fn undone(cursor: &CursorRow, end: u64, max: usize) -> Vec<u64> {
    (cursor.committed..end).filter(|o| !cursor.done_above.contains(o)).take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::LeaseRow;

    #[test]
    fn a_redelivered_offset_comes_next_and_the_cursor_catches_up_after_its_ack() {
        let mut c = CursorRow { committed: 10, ..Default::default() };
        mark_undone(&mut c, 7);
        assert_eq!(undone(&c, 12, 5), vec![7, 10, 11]);
        mark_done(&mut c, 7);
        assert_eq!((c.committed, c.done_above.len()), (10, 0));
    }

    #[test]
    fn out_of_order_acks_commit_once_the_gap_closes_and_release_the_lease() {
        let mut c = CursorRow {
            lease: Some(LeaseRow { id: "l".into(), expires_us: 10, first: 0, last: 2 }),
            ..Default::default()
        };
        mark_done(&mut c, 2);
        mark_done(&mut c, 1);
        assert_eq!((c.committed, c.done_above.len()), (0, 2));
        assert_eq!(undone(&c, 5, 10), vec![0, 3, 4]);
        assert!(c.lease.is_some());
        mark_done(&mut c, 0);
        assert_eq!(c.committed, 3);
        assert!(c.done_above.is_empty() && c.lease.is_none());
    }

    #[test]
    fn a_failure_counts_and_releases() {
        let mut c = CursorRow {
            lease: Some(LeaseRow { id: "l".into(), expires_us: 10, first: 0, last: 0 }),
            ..Default::default()
        };
        fail(&mut c, 0, 500);
        fail(&mut c, 0, 400);
        assert_eq!(c.failures[&0], 2);
        assert_eq!(c.not_before_us, 500);
        assert!(c.lease.is_none());
        mark_done(&mut c, 0);
        assert!(c.failures.is_empty());
    }
}
