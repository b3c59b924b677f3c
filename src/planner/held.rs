//! How a share group's held records move (`store::rows::ShareRow`). Shared
//! by apply and by the planner's overlay, as `cursor.rs` is for cursors, so
//! that what the planner expects of a row is what apply makes of it.

use super::effect::Effect;
use crate::store::rows::{Hold, ShareRow};

/// Moves a share row by one of the effects on its partition and group;
/// others leave it alone.
pub fn apply(row: &mut ShareRow, effect: &Effect) {
    match effect {
        Effect::Acquire { holder, expires_us, offsets, .. } => {
            for o in offsets {
                row.held.insert(*o, Hold { holder: holder.clone(), expires_us: *expires_us });
                row.retry_at.remove(o);
            }
        }
        Effect::Release { offsets, not_before_us, .. } => {
            for o in offsets {
                row.held.remove(o);
                match *not_before_us > 0 {
                    true => row.retry_at.insert(*o, *not_before_us),
                    false => row.retry_at.remove(o),
                };
            }
        }
        Effect::Renew { holder, expires_us, offsets, .. } => {
            for o in offsets {
                if let Some(hold) = row.held.get_mut(o).filter(|h| h.holder == *holder) {
                    hold.expires_us = *expires_us;
                }
            }
        }
        Effect::Ack { offset, .. } | Effect::DeadLetter { offset, .. } => {
            row.held.remove(offset);
            row.retry_at.remove(offset);
        }
        Effect::Seek { .. } => *row = ShareRow::default(),
        Effect::Retain { log_start, .. } => {
            row.held = row.held.split_off(log_start);
            row.retry_at = row.retry_at.split_off(log_start);
        }
        _ => {}
    }
}

/// The lock end a record is given when its member goes without finishing
/// it (its share session closes, its connection drops, it leaves the
/// group): available again at once, and not counted as a failed delivery.
/// Kafka's rule (SharePartition.releaseAcquiredRecords): a departing
/// member's acquired records go back to available with the delivery count
/// their acquisition raised lowered again, and never to the archive. It
/// is a `Renew` to this end rather than an effect of its own, so every build
/// that reads the effect catalogue applies it the same way; no lock that
/// runs out ends here, as every acquisition locks past the clock's now.
pub const RETURNED_US: i64 = 0;

/// Whether `offset` is held now by someone.
pub fn is_held(row: &ShareRow, offset: u64, now_us: i64) -> bool {
    row.held.get(&offset).is_some_and(|h| h.expires_us > now_us)
}

/// Whether `hold`'s member gave it back uncounted (`RETURNED_US`), as
/// opposed to letting its lock run out.
pub fn is_returned(hold: &Hold) -> bool {
    hold.expires_us == RETURNED_US
}

/// How many records are held now.
pub fn live(row: &ShareRow, now_us: i64) -> usize {
    row.held.values().filter(|h| h.expires_us > now_us).count()
}

/// Whether `offset` waits out a retry delay at `now_us`.
pub fn is_waiting(row: &ShareRow, offset: u64, now_us: i64) -> bool {
    row.retry_at.get(&offset).is_some_and(|t| *t > now_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(holder: &str, expires_us: i64, offsets: Vec<u64>) -> Effect {
        let (queue, partition, group, start) = (1, 1, "g".to_string(), 0);
        Effect::Acquire { queue, partition, group, start, holder: holder.into(), expires_us, offsets }
    }

    #[test]
    fn a_release_gives_the_record_back_after_its_delay_and_an_ack_forgets_it() {
        let mut row = ShareRow::default();
        apply(&mut row, &acquire("a", 100, vec![3, 4]));
        assert!(is_held(&row, 3, 50) && !is_held(&row, 3, 100));
        let release =
            Effect::Release { queue: 1, partition: 1, group: "g".into(), offsets: vec![3], not_before_us: 70 };
        apply(&mut row, &release);
        assert!(!is_held(&row, 3, 50) && is_waiting(&row, 3, 60) && !is_waiting(&row, 3, 70));
        apply(&mut row, &Effect::Ack { queue: 1, partition: 1, group: "g".into(), offset: 4 });
        assert_eq!(row.held.len(), 0);
        assert_eq!(row.retry_at.len(), 1);
    }

    #[test]
    fn a_renewal_extends_only_its_holders_records() {
        let mut row = ShareRow::default();
        apply(&mut row, &acquire("a", 100, vec![1, 3]));
        apply(&mut row, &acquire("b", 100, vec![2]));
        let (group, holder) = ("g".to_string(), "a".to_string());
        let renew = Effect::Renew { queue: 1, partition: 1, group, holder, expires_us: 500, offsets: vec![1, 2] };
        apply(&mut row, &renew);
        let expiries = (row.held[&1].expires_us, row.held[&2].expires_us, row.held[&3].expires_us);
        assert_eq!(expiries, (500, 100, 100));
    }
}
