//! Planning share groups (KIP-932): the members of a group take a
//! partition's records one by one, each under a lock of its own, instead of
//! the whole partition under one lease. A record is available, held by one
//! member until its lock runs out, or done (acknowledged or dead-lettered);
//! a record released or whose lock ran out counts a failed delivery, and
//! one that failed as many times as the group's delivery limit goes to the
//! dead-letter queue with its payload, as a rejected one does. A record
//! its member still held when it went (session closed, connection dropped,
//! left the group) is returned uncounted, as Kafka does (`held::RETURNED_US`).
//! The group's cursor is the share partition's start offset; the held
//! records live in its `ShareRow`.
//!
//! Kafka share consumers come here through `ShareOp`; an HTTP pop of a
//! share group comes through `consume.rs`, which calls `acquire` and
//! `acknowledge` below, so both front ends share one set of records.

use super::cursor;
use super::effect::Effect;
use super::held;
use super::overlay::Overlay;
use super::share_config::ShareConfig;
use crate::queue_options::QueueOptions;
use crate::store::rows::GroupRow;
use crate::store::{CursorKey, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ShareOp {
    /// A member's fetch: up to `max_records` available records of each
    /// partition (queue id, partition id), held for the group's lock time.
    Acquire { group: String, holder: String, partitions: Vec<(u64, u64)>, max_records: usize },
    /// A member's acknowledgements, each judged on its own.
    Acknowledge { group: String, holder: String, acks: Vec<ShareAck> },
    /// Every record `holder` holds in the group given back: its session
    /// closed, its connection dropped, or it left the group. What it still
    /// held is returned uncounted; a lock that had run out counts.
    ReleaseAll { group: String, holder: String },
}

/// Offsets `first..=last` of a partition, acknowledged as `kind`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShareAck {
    pub queue: u64,
    pub partition: u64,
    pub first: u64,
    pub last: u64,
    pub kind: AckKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AckKind {
    /// An offset with no record to deliver: done.
    Gap,
    /// Processed: done.
    Accept,
    /// Given back for another delivery now.
    Release,
    /// Not processable: to the dead-letter queue.
    Reject,
    /// Still being processed: held for another lock time.
    Renew,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ShareAnswer {
    /// Per asked partition, the records acquired as (offset, delivery
    /// count).
    Acquired(Vec<Vec<(u64, u32)>>),
    /// Per acknowledgement, whether it applied: it is refused whole when
    /// one of its records is not held by the member (never acquired, its
    /// lock ran out, or another member holds it).
    Acknowledged(Vec<bool>),
    /// How many records were given back, counted or not.
    Released(usize),
}

pub fn plan(store: &Store, overlay: &mut Overlay, now_us: i64, op: &ShareOp) -> (Vec<Effect>, ShareAnswer) {
    let mut effects = Vec::new();
    let answer = match op {
        ShareOp::Acquire { group, holder, partitions, max_records } => {
            let config = ShareConfig::of(store, overlay, now_us, group).unwrap_or_default();
            let expires_us = now_us + config.lock_us;
            let mut budget = *max_records;
            let mut acquired = Vec::new();
            for &(queue, partition) in partitions {
                let key: CursorKey = (queue, partition, group.clone());
                let Some(start) = start_of(store, overlay, now_us, &key, &config, &mut effects) else {
                    acquired.push(Vec::new());
                    continue;
                };
                let got =
                    acquire(store, overlay, now_us, &key, start, holder, expires_us, budget, &config, &mut effects);
                budget = budget.saturating_sub(got.len());
                acquired.push(got);
            }
            ShareAnswer::Acquired(acquired)
        }
        ShareOp::Acknowledge { group, holder, acks } => {
            let config = ShareConfig::of(store, overlay, now_us, group).unwrap_or_default();
            let outcomes = acks
                .iter()
                .map(|a| {
                    let key: CursorKey = (a.queue, a.partition, group.clone());
                    let offsets: Vec<u64> = match a.last.checked_sub(a.first) {
                        Some(n) if (n as usize) < config.max_locks => (a.first..=a.last).collect(),
                        _ => return false,
                    };
                    acknowledge(store, overlay, now_us, &key, holder, &offsets, a.kind, 0, &config, &mut effects)
                })
                .collect();
            ShareAnswer::Acknowledged(outcomes)
        }
        ShareOp::ReleaseAll { group, holder } => {
            let config = ShareConfig::of(store, overlay, now_us, group).unwrap_or_default();
            let released = overlay
                .share_keys(store, Some(group))
                .iter()
                .map(|key| release_all(store, overlay, now_us, key, holder, &config, &mut effects))
                .sum();
            ShareAnswer::Released(released)
        }
    };
    (effects, answer)
}

/// Where a Kafka share member starts a partition its group never read (the
/// group's `share.auto.offset.reset`), the group's subscription to the
/// queue written first when it has none; `None` for a partition gone.
fn start_of(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    key: &CursorKey,
    config: &ShareConfig,
    effects: &mut Vec<Effect>,
) -> Option<u64> {
    let (queue, partition, group) = (key.0, key.1, &key.2);
    if overlay.is_deleted(queue) || !overlay.partition_exists(store, queue, partition) {
        return None;
    }
    let from_us = match overlay.group(store, queue, group) {
        Some(g) => g.from_us,
        None => {
            let from_us = if config.earliest { 0 } else { now_us };
            overlay.put_group(queue, group, GroupRow { from_us, created_us: now_us, conflate: false });
            effects.push(Effect::Subscribe { queue, group: group.clone(), from_us, conflate: false });
            from_us
        }
    };
    let log_start = overlay.log_start(store, queue, partition);
    let end = store.partition(queue, partition).map_or(0, |p| p.next_offset);
    let start = match from_us {
        0 => log_start,
        t => store.first_kept_at_or_after(queue, partition, t).unwrap_or(end),
    };
    Some(start.max(log_start))
}

/// Gives back every record `holder` holds in the partition `key` names, as
/// its member goes: one whose lock ran out first is a failed delivery, as
/// at any expiry; one still held is returned without counting, available
/// again at once (`held::RETURNED_US`). How many were given back.
fn release_all(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    key: &CursorKey,
    holder: &str,
    config: &ShareConfig,
    effects: &mut Vec<Effect>,
) -> usize {
    let row = overlay.share(store, key);
    let (mut still_held, mut expired) = (Vec::new(), Vec::new());
    for (offset, hold) in row.held.iter().filter(|(_, h)| h.holder == holder && !held::is_returned(h)) {
        match hold.expires_us > now_us {
            true => still_held.push(*offset),
            false => expired.push(*offset),
        }
    }
    let released = still_held.len() + expired.len();
    give_back(store, overlay, key, expired, 0, config, "its acquisition lock ran out", effects);
    if !still_held.is_empty() {
        let (queue, partition, group, holder) = (key.0, key.1, key.2.clone(), holder.to_string());
        let effect =
            Effect::Renew { queue, partition, group, holder, expires_us: held::RETURNED_US, offsets: still_held };
        record(store, overlay, key, effect, effects);
    }
    released
}

/// Records `effect` in the entry and in the overlay's rows.
fn record(store: &Store, overlay: &mut Overlay, key: &CursorKey, effect: Effect, effects: &mut Vec<Effect>) {
    overlay.update_cursor(store, key, |c| cursor::apply(c, &effect));
    let mut row = overlay.share(store, key);
    held::apply(&mut row, &effect);
    overlay.put_share(key.clone(), row);
    effects.push(effect);
}

/// Up to `max` available records of the partition `key` names, acquired by
/// `holder` until `expires_us`, as (offset, delivery count). Records whose
/// lock ran out are given back first; a cursor the group does not have yet
/// is placed at `start`.
#[allow(clippy::too_many_arguments)]
pub(super) fn acquire(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    key: &CursorKey,
    start: u64,
    holder: &str,
    expires_us: i64,
    max: usize,
    config: &ShareConfig,
    effects: &mut Vec<Effect>,
) -> Vec<(u64, u32)> {
    let (queue, partition, group) = (key.0, key.1, key.2.clone());
    if overlay.cursor(store, key).is_none() {
        // Placed now even when nothing is taken: a group that starts at the
        // end must not start later at every empty fetch.
        overlay.place_cursor(store, key.clone(), start);
        effects.push(Effect::Seek { queue, partition, group: group.clone(), offset: start });
    }
    let expired: Vec<u64> = overlay
        .share(store, key)
        .held
        .iter()
        .filter(|(_, h)| h.expires_us <= now_us && !held::is_returned(h))
        .map(|(o, _)| *o)
        .collect();
    give_back(store, overlay, key, expired, 0, config, "its acquisition lock ran out", effects);

    let mut cur = overlay.cursor(store, key).expect("placed above");
    // Retention planned but not yet applied moves this cursor when it
    // applies; plan as if it had.
    cursor::skip_to(&mut cur, overlay.log_start(store, queue, partition));
    let row = overlay.share(store, key);
    // A returned record stays in the row until it is taken again, but
    // holds no lock.
    let room = config.max_locks.saturating_sub(held::live(&row, now_us)).min(max);
    let end = match config.read_committed {
        true => store.last_stable_offset(queue, partition),
        false => store.partition(queue, partition).map_or(0, |p| p.next_offset),
    };
    let delay = overlay.queue_options(store, queue).map_or(0, |o| QueueOptions::parse(&o).delayed_processing_us());
    let mut taken = Vec::new();
    let mut hidden = Vec::new();
    let mut offset = cur.committed;
    while offset < end && taken.len() < room {
        let o = offset;
        offset += 1;
        if cursor::is_done(&cur, o) || held::is_held(&row, o, now_us) || held::is_waiting(&row, o, now_us) {
            continue;
        }
        if store.is_kafka_hidden(queue, partition, o) {
            hidden.push(o);
            continue;
        }
        let visible =
            delay == 0 || store.locator.timestamp_of(queue, partition, o).is_some_and(|t| t + delay <= now_us);
        if !visible {
            break;
        }
        taken.push(o);
    }
    // Transaction markers and aborted records are nothing to deliver.
    for o in hidden {
        record(store, overlay, key, Effect::Ack { queue, partition, group: group.clone(), offset: o }, effects);
    }
    if taken.is_empty() {
        return Vec::new();
    }
    let acquired = taken.iter().map(|o| (*o, cur.failures.get(o).copied().unwrap_or(0) + 1)).collect();
    let holder = holder.to_string();
    let effect = Effect::Acquire { queue, partition, group, start, holder, expires_us, offsets: taken };
    record(store, overlay, key, effect, effects);
    acquired
}

/// Applies `holder`'s acknowledgement of `offsets` as `kind`: refused whole
/// (false) unless `holder` holds every one of them now. A release waits
/// until `not_before_us` before another delivery.
#[allow(clippy::too_many_arguments)]
pub(super) fn acknowledge(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    key: &CursorKey,
    holder: &str,
    offsets: &[u64],
    kind: AckKind,
    not_before_us: i64,
    config: &ShareConfig,
    effects: &mut Vec<Effect>,
) -> bool {
    let row = overlay.share(store, key);
    let held_here = |o: &u64| row.held.get(o).is_some_and(|h| h.holder == holder && h.expires_us > now_us);
    if offsets.is_empty() || !offsets.iter().all(held_here) {
        return false;
    }
    let (queue, partition, group) = (key.0, key.1, key.2.clone());
    match kind {
        AckKind::Gap | AckKind::Accept => {
            for &offset in offsets {
                record(store, overlay, key, Effect::Ack { queue, partition, group: group.clone(), offset }, effects);
            }
        }
        AckKind::Release => {
            give_back(store, overlay, key, offsets.to_vec(), not_before_us, config, "given back", effects);
        }
        AckKind::Renew => {
            let expires_us = now_us + config.lock_us;
            let (holder, offsets) = (holder.to_string(), offsets.to_vec());
            record(
                store,
                overlay,
                key,
                Effect::Renew { queue, partition, group, holder, expires_us, offsets },
                effects,
            );
        }
        AckKind::Reject => {
            let cur = overlay.cursor(store, key).unwrap_or_default();
            for &offset in offsets {
                let failures = cur.failures.get(&offset).copied().unwrap_or(0) + 1;
                let error = Some("rejected by a share group member".to_string());
                let effect = Effect::DeadLetter { queue, partition, group: group.clone(), offset, error, failures };
                record(store, overlay, key, effect, effects);
            }
        }
    }
    true
}

/// Gives `offsets` back for another delivery (none before `not_before_us`),
/// each counting a failed delivery; one that has now failed as many times
/// as the group's delivery limit goes to the dead-letter queue instead.
#[allow(clippy::too_many_arguments)]
fn give_back(
    store: &Store,
    overlay: &mut Overlay,
    key: &CursorKey,
    offsets: Vec<u64>,
    not_before_us: i64,
    config: &ShareConfig,
    why: &str,
    effects: &mut Vec<Effect>,
) {
    if offsets.is_empty() {
        return;
    }
    let (queue, partition, group) = (key.0, key.1, key.2.clone());
    let effect = Effect::Release { queue, partition, group: group.clone(), offsets: offsets.clone(), not_before_us };
    record(store, overlay, key, effect, effects);
    let cur = overlay.cursor(store, key).unwrap_or_default();
    for offset in offsets {
        let failures = cur.failures.get(&offset).copied().unwrap_or(0);
        if failures >= config.delivery_limit {
            let error = Some(format!("delivery count limit {} reached: {why}", config.delivery_limit));
            let effect = Effect::DeadLetter { queue, partition, group: group.clone(), offset, error, failures };
            record(store, overlay, key, effect, effects);
        }
    }
}

/// Extends every record `holder` holds, in any group, by its group's lock
/// time: how many partitions' records were extended, and the earliest new
/// expiry.
pub(super) fn renew(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    holder: &str,
    effects: &mut Vec<Effect>,
) -> (usize, Option<i64>) {
    let mut earliest: Option<i64> = None;
    let mut renewed = 0;
    for key in overlay.share_keys(store, None) {
        let row = overlay.share(store, &key);
        let offsets: Vec<u64> =
            row.held.iter().filter(|(_, h)| h.holder == holder && h.expires_us > now_us).map(|(o, _)| *o).collect();
        if offsets.is_empty() {
            continue;
        }
        let config = ShareConfig::of(store, overlay, now_us, &key.2).unwrap_or_default();
        let expires_us = now_us + config.lock_us;
        let (queue, partition, group) = (key.0, key.1, key.2.clone());
        let effect = Effect::Renew { queue, partition, group, holder: holder.to_string(), expires_us, offsets };
        record(store, overlay, &key, effect, effects);
        renewed += 1;
        earliest = Some(earliest.map_or(expires_us, |e| e.min(expires_us)));
    }
    (renewed, earliest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{Answer, Command};
    use crate::planner::kv::{Expiry, KvKind, KvOp};
    use crate::planner::testing::{fresh, plan, push, run_at, settle};
    use crate::planner::Planner;

    /// Queue "q" with messages t0..t{n-1} in partition "p", and share group
    /// "g" with `configs`.
    fn shared(n: usize, configs: &str) -> (Store, Planner, (u64, u64)) {
        let (mut store, mut planner) = fresh();
        for i in 0..n {
            run_at(&mut planner, &mut store, 1 + i as i64, push(&format!("t{i}")));
        }
        let kind = KvKind::Put { key: "g".into(), value: configs.into(), expiry: Expiry::Forever, expect: None };
        let op = KvOp { ns: crate::internal_kv::SHARE_GROUPS.into(), kind, required: true };
        run_at(&mut planner, &mut store, 100, Command::Kv(vec![op]));
        let q = store.queue_id("q").unwrap();
        let p = store.partition_id(q, "p").unwrap();
        (store, planner, (q, p))
    }

    fn acquire_op(holder: &str, at: (u64, u64), max_records: usize) -> Command {
        Command::Share(ShareOp::Acquire { group: "g".into(), holder: holder.into(), partitions: vec![at], max_records })
    }

    fn acquired(answer: Answer) -> Vec<(u64, u32)> {
        let Answer::Share(ShareAnswer::Acquired(partitions)) = answer else { panic!("{answer:?}") };
        partitions.into_iter().next().unwrap()
    }

    fn ack_op(holder: &str, at: (u64, u64), first: u64, last: u64, kind: AckKind) -> Command {
        let ack = ShareAck { queue: at.0, partition: at.1, first, last, kind };
        Command::Share(ShareOp::Acknowledge { group: "g".into(), holder: holder.into(), acks: vec![ack] })
    }

    fn applied(answer: Answer) -> Vec<bool> {
        let Answer::Share(ShareAnswer::Acknowledged(applied)) = answer else { panic!("{answer:?}") };
        applied
    }

    const EARLIEST: &str = r#"{"share.auto.offset.reset":"earliest","share.record.lock.duration.ms":"1000"}"#;

    #[test]
    fn members_take_disjoint_records_and_only_the_holder_may_acknowledge_them() {
        let (mut store, mut planner, at) = shared(5, EARLIEST);
        let a = acquired(run_at(&mut planner, &mut store, 200, acquire_op("a", at, 2)));
        let b = acquired(run_at(&mut planner, &mut store, 201, acquire_op("b", at, 10)));
        assert_eq!(a, vec![(0, 1), (1, 1)]);
        assert_eq!(b, vec![(2, 1), (3, 1), (4, 1)]);
        assert_eq!(applied(run_at(&mut planner, &mut store, 202, ack_op("b", at, 0, 0, AckKind::Accept))), vec![false]);
        assert_eq!(applied(run_at(&mut planner, &mut store, 203, ack_op("a", at, 0, 1, AckKind::Accept))), vec![true]);
        assert_eq!(store.cursors.get(&(at.0, at.1, "g".into())).unwrap().committed, 2);
    }

    #[test]
    fn a_lock_that_runs_out_counts_a_delivery_and_the_limit_dead_letters() {
        let configs = r#"{"share.auto.offset.reset":"earliest","share.record.lock.duration.ms":"1000","share.delivery.count.limit":"2"}"#;
        let (mut store, mut planner, at) = shared(1, configs);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 200, acquire_op("a", at, 1))), vec![(0, 1)]);
        // Held: no one else gets it until the lock runs out, one second on.
        assert_eq!(acquired(run_at(&mut planner, &mut store, 300, acquire_op("b", at, 1))), vec![]);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 1_000_200, acquire_op("b", at, 1))), vec![(0, 2)]);
        assert_eq!(
            applied(run_at(&mut planner, &mut store, 1_000_300, ack_op("a", at, 0, 0, AckKind::Accept))),
            vec![false]
        );
        assert_eq!(
            applied(run_at(&mut planner, &mut store, 1_000_400, ack_op("b", at, 0, 0, AckKind::Release))),
            vec![true]
        );
        let key = (at.0, at.1, "g".to_string(), 0);
        assert_eq!(store.dlq.get(&key).map(|r| r.failures), Some(2), "two deliveries reach the limit of 2");
        assert_eq!(acquired(run_at(&mut planner, &mut store, 1_000_500, acquire_op("c", at, 1))), vec![]);
    }

    #[test]
    fn a_group_that_starts_at_the_end_starts_there_once() {
        let (mut store, mut planner, at) = shared(3, "{}");
        assert_eq!(acquired(run_at(&mut planner, &mut store, 200, acquire_op("a", at, 10))), vec![]);
        run_at(&mut planner, &mut store, 300, push("t3"));
        assert_eq!(acquired(run_at(&mut planner, &mut store, 400, acquire_op("a", at, 10))), vec![(3, 1)]);
    }

    #[test]
    fn the_in_flight_records_of_a_partition_are_bounded() {
        let configs = r#"{"share.auto.offset.reset":"earliest","share.partition.max.record.locks":"100"}"#;
        let (mut store, mut planner, at) = shared(150, configs);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 200, acquire_op("a", at, 500))).len(), 100);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 201, acquire_op("b", at, 500))).len(), 0);
        assert_eq!(applied(run_at(&mut planner, &mut store, 202, ack_op("a", at, 0, 9, AckKind::Accept))), vec![true]);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 203, acquire_op("b", at, 500))).len(), 10);
    }

    fn release_all_op(holder: &str) -> Command {
        Command::Share(ShareOp::ReleaseAll { group: "g".into(), holder: holder.into() })
    }

    #[test]
    fn a_member_that_leaves_returns_what_it_held_uncounted_and_planning_ahead_of_apply_agrees() {
        let (mut store, mut planner, at) = shared(4, EARLIEST);
        run_at(&mut planner, &mut store, 200, acquire_op("a", at, 4));
        // Planned before the release applies: the overlay already has them back.
        let first = plan(&mut planner, &store, 300, release_all_op("a"));
        let second = plan(&mut planner, &store, 301, acquire_op("b", at, 4));
        settle(&mut store, &first);
        settle(&mut store, &second);
        planner.caught_up_with(&store);
        // Kafka lowers the delivery count a departing member's acquisition
        // raised: the next delivery is the first again.
        assert_eq!(acquired(second.answer), vec![(0, 1), (1, 1), (2, 1), (3, 1)]);
    }

    #[test]
    fn records_returned_by_departing_members_never_reach_the_delivery_limit_but_a_lock_that_ran_out_counts() {
        // Kafka's SharePartition.releaseAcquiredRecords: the records a member
        // still holds when its session or connection ends go back to
        // available with their delivery count lowered again, never to the
        // archive; an acquisition lock that runs out counts a delivery.
        let configs = r#"{"share.auto.offset.reset":"earliest","share.record.lock.duration.ms":"1000","share.delivery.count.limit":"2"}"#;
        let (mut store, mut planner, at) = shared(2, configs);
        for (i, member) in ["a", "b", "c", "d"].into_iter().enumerate() {
            let t = 200 + 100 * i as i64;
            assert_eq!(acquired(run_at(&mut planner, &mut store, t, acquire_op(member, at, 1))), vec![(0, 1)]);
            run_at(&mut planner, &mut store, t + 50, release_all_op(member));
        }
        assert!(store.dlq.is_empty(), "no returned record is dead-lettered");
        // "e" takes both and goes only after their locks ran out: a delivery
        // each. Offset 0 comes to "f" as its second delivery, and when that
        // lock runs out too it reaches the limit of 2.
        assert_eq!(acquired(run_at(&mut planner, &mut store, 1_000, acquire_op("e", at, 2))), vec![(0, 1), (1, 1)]);
        run_at(&mut planner, &mut store, 1_002_000, release_all_op("e"));
        assert_eq!(acquired(run_at(&mut planner, &mut store, 1_003_000, acquire_op("f", at, 1))), vec![(0, 2)]);
        run_at(&mut planner, &mut store, 2_004_000, release_all_op("f"));
        let dead = |offset| store.dlq.get(&(at.0, at.1, "g".to_string(), offset)).map(|r| r.failures);
        assert_eq!(dead(0), Some(2), "two locks ran out: the limit of 2");
        assert_eq!(dead(1), None);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 2_005_000, acquire_op("h", at, 2))), vec![(1, 2)]);
    }

    #[test]
    fn a_returned_record_holds_no_lock_and_its_member_cannot_acknowledge_it() {
        let configs = r#"{"share.auto.offset.reset":"earliest","share.partition.max.record.locks":"100"}"#;
        let (mut store, mut planner, at) = shared(150, configs);
        assert_eq!(acquired(run_at(&mut planner, &mut store, 200, acquire_op("a", at, 100))).len(), 100);
        run_at(&mut planner, &mut store, 300, release_all_op("a"));
        assert_eq!(applied(run_at(&mut planner, &mut store, 301, ack_op("a", at, 0, 0, AckKind::Accept))), vec![false]);
        // All 100 places are free again, not taken by the returned records.
        let b = acquired(run_at(&mut planner, &mut store, 400, acquire_op("b", at, 500)));
        assert_eq!((b.len(), b[0], b[99]), (100, (0, 1), (99, 1)));
    }
}
