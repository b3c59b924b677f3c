//! Planning the consuming side: pops claim partitions for a consumer group
//! under a lease, acks move the group's cursor, failures count toward the
//! retry limit and then the dead-letter queue, and leases are extended.

use super::cursor;
use super::effect::Effect;
use super::items::{
    AckItem, AckOutcome, AckStatus, Claim, PopRequest, Refused, Subscription, QUEUE_MODE, REFUSED_ALREADY_COMMITTED,
    REFUSED_NO_LEASE, REFUSED_UNKNOWN_MESSAGE, REFUSED_UNRESOLVABLE,
};
use super::overlay::Overlay;
use super::share::{self, AckKind};
use super::share_config::ShareConfig;
use crate::message::transaction_hash;
use crate::qlog::kafka_batch::placed_offset;
use crate::queue_options::QueueOptions;
use crate::store::rows::{CursorRow, GroupRow, LeaseRow};
use crate::store::{CursorKey, Store};

/// A queue's options, by id.
fn options_of(store: &Store, queue: u64) -> Option<QueueOptions> {
    store.queues.get(&store.queue_name(queue)?.to_string()).map(|r| QueueOptions::parse(&r.options))
}

/// The queues a pop may take from, in the order it takes: by namespace or
/// task, higher `priority` first, then by name.
fn pop_queues(store: &Store, req: &PopRequest) -> Vec<(u64, String)> {
    match &req.queue {
        Some(name) => store.queue_id(name).map(|id| (id, name.clone())).into_iter().collect(),
        None => {
            let mut queues: Vec<(u64, String)> = store
                .queues
                .iter()
                .filter(|(_, row)| {
                    req.namespace.as_ref().is_none_or(|n| row.namespace.as_ref() == Some(n))
                        && req.task.as_ref().is_none_or(|t| row.task.as_ref() == Some(t))
                })
                .map(|(name, row)| (row.id, name.clone()))
                .collect();
            // Listed by name already: a stable sort keeps ties in name order.
            queues.sort_by_key(|(id, _)| std::cmp::Reverse(store.traits(*id).priority));
            queues
        }
    }
}

/// Plans a pop. `rotation` spreads claims over partitions from one pop to the next.
pub fn plan_pop(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    lease_id: String,
    req: &PopRequest,
    rotation: u64,
) -> (Vec<Effect>, Vec<Claim>) {
    let mut effects = Vec::new();
    let mut claims = Vec::new();
    let mut budget = req.batch.max(1);
    for (queue, queue_name) in pop_queues(store, req) {
        if overlay.is_deleted(queue) {
            continue;
        }
        let options = store.queues.get(&queue_name).map(|r| QueueOptions::parse(&r.options));
        let Some(options) = options else { continue };
        let (from_us, conflate) = match overlay.group(store, queue, &req.group) {
            Some(g) => (g.from_us, g.conflate),
            None if req.group == QUEUE_MODE => (0, false),
            None => {
                let from_us = match req.subscription {
                    Subscription::All => 0,
                    Subscription::New => now_us,
                    Subscription::From(t) => t,
                };
                let conflate = req.conflation;
                overlay.put_group(queue, &req.group, GroupRow { from_us, created_us: now_us, conflate });
                effects.push(Effect::Subscribe { queue, group: req.group.clone(), from_us, conflate });
                (from_us, conflate)
            }
        };
        let mut partitions: Vec<u64> = match &req.partition {
            Some(name) => store.partition_id(queue, name).into_iter().collect(),
            None => store.partitions.range((queue, 0)..=(queue, u64::MAX)).map(|((_, p), _)| *p).collect(),
        };
        partitions.retain(|p| !overlay.is_partition_deleted(queue, *p));
        // A share group's members take records one by one (`share.rs`).
        let shared = ShareConfig::of(store, overlay, now_us, &req.group);
        if !partitions.is_empty() {
            let by = (rotation % partitions.len() as u64) as usize;
            partitions.rotate_left(by);
        }
        for partition in partitions {
            if budget == 0 || claims.len() >= req.partitions.max(1) {
                return (effects, claims);
            }
            let row = store.partition(queue, partition).expect("listed partitions have rows");
            if row.last_write_us + options.window_buffer_us() > now_us {
                continue;
            }
            let key: CursorKey = (queue, partition, req.group.clone());
            let existing = overlay.cursor(store, &key);
            let existing_placed = existing.is_some();
            let log_start = overlay.log_start(store, queue, partition);
            let start = match &existing {
                Some(c) => c.committed,
                None if from_us == 0 => log_start,
                None => store.first_kept_at_or_after(queue, partition, from_us).unwrap_or(row.next_offset),
            }
            .max(log_start);
            if let Some(config) = &shared {
                let expires_us = now_us + req.lease_us.unwrap_or(config.lock_us);
                let holder = &lease_id;
                let messages = share::acquire(
                    store,
                    overlay,
                    now_us,
                    &key,
                    start,
                    holder,
                    expires_us,
                    budget,
                    config,
                    &mut effects,
                );
                if messages.is_empty() {
                    continue;
                }
                if req.auto_ack {
                    let offsets: Vec<u64> = messages.iter().map(|(o, _)| *o).collect();
                    let kind = AckKind::Accept;
                    share::acknowledge(store, overlay, now_us, &key, holder, &offsets, kind, 0, config, &mut effects);
                }
                budget -= messages.len();
                claims.push(Claim {
                    queue_id: queue,
                    queue: queue_name.clone(),
                    partition_id: partition,
                    partition: row.name.clone(),
                    group: req.group.clone(),
                    lease_id: if req.auto_ack { String::new() } else { lease_id.clone() },
                    lease_expires_us: expires_us,
                    messages,
                });
                continue;
            }
            let mut cur = existing.unwrap_or(CursorRow { committed: start, ..Default::default() });
            // Retention planned but not yet applied moves this cursor when it
            // applies; plan as if it had.
            cursor::skip_to(&mut cur, log_start);
            if cur.lease.as_ref().is_some_and(|l| l.expires_us > now_us) || cur.not_before_us > now_us {
                continue;
            }
            let before = effects.len();
            settle_expired(&mut cur, &key, &options, &mut effects);
            if effects.len() > before {
                overlay.put_cursor(key.clone(), cur.clone());
            }
            let delay = options.delayed_processing_us();
            let visible = |o: u64| {
                delay == 0 || store.locator.timestamp_of(queue, partition, o).is_some_and(|t| t + delay <= now_us)
            };
            // An HTTP reader sees what Kafka transactions committed: up to
            // the last stable offset, past their markers and aborted records.
            let end = store.last_stable_offset(queue, partition);
            let hidden = |o: u64| store.is_kafka_hidden(queue, partition, o);
            let offsets: Vec<u64> = if conflate {
                // The newest visible message; everything behind it is retired.
                let newest =
                    (cur.committed..end).rev().find(|o| !cursor::is_done(&cur, *o) && visible(*o) && !hidden(*o));
                if let Some(newest) = newest.filter(|n| *n > cur.committed) {
                    effects.push(Effect::Seek { queue, partition, group: req.group.clone(), offset: newest });
                    cur = CursorRow { committed: newest, ..Default::default() };
                    overlay.put_cursor(key.clone(), cur.clone());
                }
                newest.into_iter().collect()
            } else {
                let undone = cursor::undone(&cur, end, budget);
                let skipped: Vec<u64> = undone.iter().copied().filter(|o| hidden(*o)).collect();
                if !skipped.is_empty() {
                    pass_over(&mut cur, &key, start, existing_placed, &skipped, &mut effects);
                    overlay.put_cursor(key.clone(), cur.clone());
                }
                undone.into_iter().filter(|o| !hidden(*o)).take_while(|o| visible(*o)).collect()
            };
            let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else { continue };
            let lease_us = req.lease_us.unwrap_or_else(|| options.lease_time_us());
            let lease = LeaseRow { id: lease_id.clone(), expires_us: now_us + lease_us, first, last };
            let messages = offsets.iter().map(|o| (*o, cur.failures.get(o).copied().unwrap_or(0) + 1)).collect();
            cursor::deliver(&mut cur, &lease, req.auto_ack, &offsets);
            overlay.put_cursor(key, cur);
            budget -= offsets.len();
            effects.push(Effect::Deliver {
                queue,
                partition,
                group: req.group.clone(),
                start,
                lease: lease.clone(),
                auto_ack: req.auto_ack,
            });
            claims.push(Claim {
                queue_id: queue,
                queue: queue_name.clone(),
                partition_id: partition,
                partition: row.name.clone(),
                group: req.group.clone(),
                lease_id: if req.auto_ack { String::new() } else { lease_id.clone() },
                lease_expires_us: lease.expires_us,
                messages,
            });
        }
    }
    (effects, claims)
}

/// Marks offsets that hold no message (Kafka transaction markers, aborted
/// transactions' records) done for the group, so its cursor moves over
/// them; a cursor the group does not have yet is placed at `start` first.
fn pass_over(
    cur: &mut CursorRow,
    key: &CursorKey,
    start: u64,
    placed: bool,
    offsets: &[u64],
    effects: &mut Vec<Effect>,
) {
    let (queue, partition, group) = (key.0, key.1, &key.2);
    if !placed {
        effects.push(Effect::Seek { queue, partition, group: group.clone(), offset: start });
    }
    for offset in offsets {
        let effect = Effect::Ack { queue, partition, group: group.clone(), offset: *offset };
        cursor::apply(cur, &effect);
        effects.push(effect);
    }
}

/// A lease that ran out counts as a failed delivery of each message it
/// still held; a message whose failures are past the retry limit is
/// dead-lettered (or dropped, as the queue says) instead of delivered again.
fn settle_expired(cur: &mut CursorRow, key: &CursorKey, options: &QueueOptions, effects: &mut Vec<Effect>) {
    let (queue, partition, group) = (key.0, key.1, key.2.clone());
    if cur.lease.is_some() {
        let effect = Effect::LeaseExpired { queue, partition, group: group.clone() };
        cursor::apply(cur, &effect);
        effects.push(effect);
    }
    let exhausted: Vec<(u64, u32)> =
        cur.failures.iter().filter(|(_, n)| **n > options.retry_limit()).map(|(o, n)| (*o, *n)).collect();
    for (offset, failures) in exhausted {
        let effect = if options.dead_letter_after_retries() {
            let error = Some("retries exhausted: the lease expired".to_string());
            Effect::DeadLetter { queue, partition, group: group.clone(), offset, error, failures }
        } else {
            Effect::Ack { queue, partition, group: group.clone(), offset }
        };
        cursor::apply(cur, &effect);
        effects.push(effect);
    }
}

/// Plans a batch of acks, each judged against the state the ones before it left.
pub fn plan_acks(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    items: &[AckItem],
) -> (Vec<Effect>, Vec<AckOutcome>) {
    let mut effects = Vec::new();
    let outcomes = items.iter().map(|item| plan_ack(store, overlay, now_us, item, &mut effects)).collect();
    (effects, outcomes)
}

fn plan_ack(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    item: &AckItem,
    effects: &mut Vec<Effect>,
) -> AckOutcome {
    let refused = |why| AckOutcome { refused: Some(Refused(why)), ..Default::default() };
    let (queue, partition, group) = (item.queue_id, item.partition_id, item.group.clone());
    // A message by its dedup row; a Kafka record, which has none, by the
    // place its ack was resolved to.
    let row = overlay.dedup(store, queue, partition, &transaction_hash(&item.transaction_id));
    let Some(offset) = row.or_else(|| placed_offset(&item.transaction_id)) else {
        return refused(REFUSED_UNRESOLVABLE);
    };
    let key: CursorKey = (queue, partition, group.clone());
    let Some(cur) = overlay.cursor(store, &key) else {
        return refused(REFUSED_NO_LEASE);
    };
    // An ack commits the cursor: below it, a completion has nothing left to
    // do (a no-op, said so), and a failure can no longer be honoured.
    if cursor::is_done(&cur, offset) {
        return match item.status {
            AckStatus::Completed => AckOutcome { noop: true, ..Default::default() },
            AckStatus::Failed | AckStatus::DeadLetter => refused(REFUSED_ALREADY_COMMITTED),
        };
    }
    if let Some(hold) = overlay.share(store, &key).held.get(&offset).cloned() {
        return plan_shared_ack(store, overlay, now_us, item, &key, offset, &hold.holder, effects);
    }
    let Some(lease) = cur.lease.as_ref().filter(|l| {
        l.expires_us > now_us
            && (l.first..=l.last).contains(&offset)
            && item.lease_id.as_ref().is_none_or(|id| *id == l.id)
    }) else {
        return refused(REFUSED_NO_LEASE);
    };
    let Some(options) = options_of(store, queue) else {
        return refused(REFUSED_UNKNOWN_MESSAGE);
    };
    let failures = cur.failures.get(&offset).copied().unwrap_or(0);
    let ack = |offset| Effect::Ack { queue, partition, group: group.clone(), offset };
    let fail = Effect::Fail {
        queue,
        partition,
        group: group.clone(),
        offset,
        not_before_us: now_us + options.retry_delay_us(),
    };
    let dead_letter = |failures| Effect::DeadLetter {
        queue,
        partition,
        group: group.clone(),
        offset,
        error: item.error.clone(),
        failures,
    };
    let planned = match item.status {
        // The ack is a commit: the lease's messages before this one that are
        // not done yet are done with it.
        AckStatus::Completed => {
            (lease.first..offset).filter(|o| !cursor::is_done(&cur, *o)).chain([offset]).map(ack).collect()
        }
        AckStatus::Failed if failures < options.retry_limit() => vec![fail],
        // A failure releases the lease even when it is the last the message
        // may have: the consumer drops the rest of its batch at a failure,
        // so the rest must be delivered again now, not when the lease ends.
        // The Fail counts and releases; the Ack or DeadLetter after it
        // finishes the message and forgets the count.
        AckStatus::Failed if !options.dead_letter_after_retries() => vec![fail, ack(offset)],
        AckStatus::Failed => vec![fail, dead_letter(failures + 1)],
        AckStatus::DeadLetter => vec![dead_letter(failures)],
    };
    let dead_lettered = planned.iter().any(|e| matches!(e, Effect::DeadLetter { .. }));
    for effect in planned {
        overlay.update_cursor(store, &key, |c| cursor::apply(c, &effect));
        effects.push(effect);
    }
    let lease_released = overlay.cursor(store, &key).is_some_and(|c| c.lease.is_none());
    AckOutcome { dead_lettered, lease_released, ..Default::default() }
}

/// An ack of a record a share group's member holds: a completion is that
/// record's alone, a failure gives it back after the queue's retry delay
/// (to the dead-letter queue at the group's delivery limit).
#[allow(clippy::too_many_arguments)]
fn plan_shared_ack(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    item: &AckItem,
    key: &CursorKey,
    offset: u64,
    holder: &str,
    effects: &mut Vec<Effect>,
) -> AckOutcome {
    let holder = item.lease_id.as_deref().unwrap_or(holder);
    let config = ShareConfig::of(store, overlay, now_us, &key.2).unwrap_or_default();
    let retry_delay = options_of(store, key.0).map_or(0, |o| o.retry_delay_us());
    let kind = match item.status {
        AckStatus::Completed => AckKind::Accept,
        AckStatus::Failed => AckKind::Release,
        AckStatus::DeadLetter => AckKind::Reject,
    };
    let before = effects.len();
    let not_before_us = if retry_delay > 0 { now_us + retry_delay } else { 0 };
    if !share::acknowledge(store, overlay, now_us, key, holder, &[offset], kind, not_before_us, &config, effects) {
        return AckOutcome { refused: Some(Refused(REFUSED_NO_LEASE)), ..Default::default() };
    }
    let dead_lettered = effects[before..].iter().any(|e| matches!(e, Effect::DeadLetter { .. }));
    let lease_released = !overlay.share(store, key).held.values().any(|h| h.holder == holder);
    AckOutcome { dead_lettered, lease_released, ..Default::default() }
}

/// Plans extending every live claim of a lease by its queue's lease time.
pub fn plan_extend(
    store: &Store,
    overlay: &mut Overlay,
    now_us: i64,
    lease_id: &str,
) -> (Vec<Effect>, usize, Option<i64>) {
    let mut effects = Vec::new();
    let mut expires = None;
    for key in overlay.lease_holders(store, lease_id) {
        let Some(cur) = overlay.cursor(store, &key) else { continue };
        if cur.lease.as_ref().is_none_or(|l| l.expires_us <= now_us) {
            continue;
        }
        let lease_time = options_of(store, key.0).map_or(300_000_000, |o| o.lease_time_us());
        let expires_us = now_us + lease_time;
        let effect = Effect::ExtendLease { queue: key.0, partition: key.1, group: key.2.clone(), expires_us };
        overlay.update_cursor(store, &key, |c| cursor::apply(c, &effect));
        effects.push(effect);
        expires = Some(expires.map_or(expires_us, |e: i64| e.min(expires_us)));
    }
    let partition_leases = effects.len();
    let (shared, shared_expiry) = share::renew(store, overlay, now_us, lease_id, &mut effects);
    let renewed = partition_leases + shared;
    let expires = match (expires, shared_expiry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    (effects, renewed, expires)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{Answer, Command, ConfigureQueue};
    use crate::planner::testing::{ack, claimed, fresh, pop, push, run_at};
    use crate::planner::Planner;
    use serde_json::json;

    /// Queue "q" with `options`, messages t1..t3 in partition "p", and the
    /// claim of a pop of all three in queue mode.
    fn three_leased(options: serde_json::Value) -> (Store, Planner, Claim) {
        let (mut store, mut planner) = fresh();
        let options = options.as_object().unwrap().clone();
        let configure = Command::Configure(ConfigureQueue { queue: "q".into(), namespace: None, task: None, options });
        run_at(&mut planner, &mut store, 1, configure);
        for (i, t) in ["t1", "t2", "t3"].into_iter().enumerate() {
            run_at(&mut planner, &mut store, 2 + i as i64, push(t));
        }
        let Command::Pop(mut req) = pop(QUEUE_MODE) else { unreachable!() };
        req.batch = 3;
        let Answer::Popped(claims) = run_at(&mut planner, &mut store, 10, Command::Pop(req)) else { panic!() };
        (store, planner, claims[0].clone())
    }

    fn acked(planner: &mut Planner, store: &mut Store, at_us: i64, command: Command) -> AckOutcome {
        match run_at(planner, store, at_us, command) {
            Answer::Acked(outcomes) => outcomes[0].clone(),
            other => panic!("ack answered {other:?}"),
        }
    }

    fn cursor_of(store: &Store, claim: &Claim) -> CursorRow {
        store.cursors.get(&(claim.queue_id, claim.partition_id, QUEUE_MODE.to_string())).unwrap().clone()
    }

    #[test]
    fn an_ack_commits_the_messages_before_it_and_below_the_cursor_only_a_completion_passes() {
        let (mut store, mut planner, claim) = three_leased(json!({}));
        let mid = acked(&mut planner, &mut store, 20, ack(&claim, "t2", AckStatus::Completed));
        assert!(mid.refused.is_none() && !mid.noop && !mid.lease_released);
        assert_eq!(cursor_of(&store, &claim).committed, 2, "t1 is committed with t2");

        let late_nack = acked(&mut planner, &mut store, 21, ack(&claim, "t1", AckStatus::Failed));
        assert_eq!(late_nack.refused, Some(Refused(REFUSED_ALREADY_COMMITTED)));
        let late_ack = acked(&mut planner, &mut store, 22, ack(&claim, "t1", AckStatus::Completed));
        assert!(late_ack.refused.is_none() && late_ack.noop);
        assert!(cursor_of(&store, &claim).lease.is_some(), "neither touched the lease, which still holds t3");

        let last = acked(&mut planner, &mut store, 23, ack(&claim, "t3", AckStatus::Completed));
        assert!(last.refused.is_none() && !last.noop && last.lease_released);
        let ghost = acked(&mut planner, &mut store, 24, ack(&claim, "never-pushed", AckStatus::Completed));
        assert_eq!(ghost.refused, Some(Refused(REFUSED_UNRESOLVABLE)));
    }

    #[test]
    fn a_failure_past_the_retry_limit_dead_letters_and_still_releases_the_lease() {
        let (mut store, mut planner, claim) = three_leased(json!({"retryLimit": 0}));
        let outcome = acked(&mut planner, &mut store, 20, ack(&claim, "t1", AckStatus::Failed));
        assert!(outcome.dead_lettered && outcome.lease_released);
        let cur = cursor_of(&store, &claim);
        assert_eq!(cur.committed, 1);
        assert!(cur.failures.is_empty(), "the dead letter forgets the count");
        let again = claimed(&crate::planner::testing::plan(&mut planner, &store, 30, pop(QUEUE_MODE)));
        assert_eq!(again.messages, vec![(1, 1)], "t2 is delivered again at once, its first delivery counted once");
    }

    #[test]
    fn a_pop_may_ask_for_its_own_lease_length() {
        let (mut store, mut planner) = fresh();
        run_at(&mut planner, &mut store, 1, push("t1"));
        let Command::Pop(mut req) = pop(QUEUE_MODE) else { unreachable!() };
        req.lease_us = Some(2_000_000);
        let Answer::Popped(claims) = run_at(&mut planner, &mut store, 10, Command::Pop(req)) else { panic!() };
        assert_eq!(claims[0].lease_expires_us, 2_000_010);
    }
}
