//! A share group in the cluster simulator's workload (KIP-932's record
//! locks, `planner/share.rs`): three members of one group acquire the
//! queues' records one by one under one-second locks, then accept, release,
//! reject or renew what they hold, or leave the group (giving back all they
//! hold), each call through a node the seed picks. The group's configs are
//! written first: from the earliest record, a one-second lock, a delivery
//! limit of three. Checked as the answers come:
//!
//! - no record is acquired by two members at once. Each acquisition of a
//!   record is a new delivery, so no two answered acquisitions carry the
//!   same delivery count unless the first one's member left the group in
//!   between (a departing member's records come back uncounted, as Kafka
//!   gives them back); and the later of two was answered no sooner than
//!   the earlier's lock could end (planned at its sending at the earliest,
//!   for the lock's length, on the one wall clock the nodes share), unless
//!   the earlier holder gave the record back in between;
//! - delivery counts are exact: none past the group's limit, none above the
//!   acquisitions sent, and (on each settled node) no record's count of
//!   failed deliveries below what an answered delivery showed, so a crash
//!   takes back no delivery;
//! - an acknowledgement applies only for the member that holds the record:
//!   none once another member's later delivery of it was answered;
//! - a record whose acceptance was answered is never acquired again;
//! - an acknowledgement of a record its member surely holds (its lock
//!   unable to have ended) is not refused.
//!
//! And on each settled node (`check`): none lost, every record the group
//! is done with was accepted by some acknowledgement sent, or is in the
//! dead-letter queue because it was rejected or delivered as often as the
//! limit; every record whose acceptance was answered is done and not
//! dead-lettered.

use super::workload::{PARTITIONS, QUEUES};
use queen::seams::planner::{
    AckKind, Answer, Command, Expiry, KvAnswer, KvKind, KvOp, ShareAck, ShareAnswer, ShareOp, AUTO_OFFSET_RESET,
    DELIVERY_COUNT_LIMIT, LOCK_DURATION_MS, SHARE_GROUPS,
};
use queen::seams::replicate::ProposeError;
use queen::seams::store::{CursorRow, Store};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::time::Instant;

/// The share group the workload's members belong to.
pub const GROUP: &str = "sim-share";
const MEMBERS: &[&str] = &["m0", "m1", "m2"];
/// The group's acquisition lock: short, so that some run out mid-run.
const LOCK: Duration = Duration::from_secs(1);
/// The group's delivery count limit.
const LIMIT: u32 = 3;
/// How far a planner's stamp may run ahead of the wall clock (a microsecond
/// per chunk planned, `plan_clock.rs`).
const STAMP_LEAD: Duration = Duration::from_millis(1);
/// A record acquired this long ago is no longer one the workload
/// acknowledges.
const FORGET_AFTER: Duration = Duration::from_secs(3);

/// (queue id, partition id, offset).
type Rec = (u64, u64, u64);

/// One delivery of a record, as answered.
struct Delivery {
    holder: &'static str,
    count: u32,
    sent_at: Instant,
    answered_at: Instant,
}

/// When a call was sent, and when its answer came.
struct Sending {
    sent_at: Instant,
    answered_at: Option<Instant>,
}

impl Sending {
    /// The call may have been planned after `from` and before `until`.
    fn within(&self, from: Instant, until: Instant) -> bool {
        self.sent_at < until && self.answered_at.is_none_or(|a| a > from)
    }
}

/// Marks the call sent at `sent_at` among `sendings` answered.
fn answered(sendings: Option<&mut Vec<Sending>>, sent_at: Instant) {
    if let Some(s) = sendings.into_iter().flatten().find(|s| s.sent_at == sent_at) {
        s.answered_at.get_or_insert_with(Instant::now);
    }
}

/// What a share call was sent with.
pub enum ShareSent {
    Configure,
    Acquire { holder: &'static str, partitions: Vec<(u64, u64)>, sent_at: Instant },
    Acknowledge { holder: &'static str, acks: Vec<(Rec, AckKind)>, sent_at: Instant },
    Leave { holder: &'static str, sent_at: Instant },
}

#[derive(Default)]
pub struct ShareModel {
    /// The group's configs are written (an answer said so).
    configured: bool,
    /// Every answered delivery of each record.
    deliveries: BTreeMap<Rec, Vec<Delivery>>,
    /// Delivered and not acknowledged by the workload yet: what an
    /// acknowledgement may name, and when it was acquired.
    unacked: Vec<(&'static str, Rec, Instant)>,
    /// What each member sent that gives a record back (a release,
    /// rejection or acceptance of it).
    given_back: BTreeMap<(&'static str, Rec), Vec<Sending>>,
    /// Each member's leaving of the group, giving back all it held.
    left: BTreeMap<&'static str, Vec<Sending>>,
    /// Records some member sent an acceptance of, and a rejection of.
    accept_sent: BTreeSet<Rec>,
    reject_sent: BTreeSet<Rec>,
    /// Records whose acceptance was answered as applied, and when.
    accepted: BTreeMap<Rec, Instant>,
    acquires_sent: u64,
    /// Per member, its acquisitions sent and not answered yet (one whose
    /// outcome is unknown stays here: it may still apply).
    pending: BTreeMap<&'static str, usize>,
    pub acquired: u64,
    pub acknowledged: u64,
}

impl ShareModel {
    /// A share call the seed draws, or `None` when the node's store knows
    /// none of the queues' partitions yet.
    pub fn next(&mut self, rng: &mut StdRng, store: &Store) -> Option<(Command, ShareSent)> {
        if !self.configured {
            let configs = serde_json::json!({
                AUTO_OFFSET_RESET: "earliest",
                LOCK_DURATION_MS: LOCK.as_millis().to_string(),
                DELIVERY_COUNT_LIMIT: LIMIT.to_string(),
            });
            let kind =
                KvKind::Put { key: GROUP.into(), value: configs.to_string(), expiry: Expiry::Forever, expect: None };
            return Some((
                Command::Kv(vec![KvOp { ns: SHARE_GROUPS.into(), kind, required: true }]),
                ShareSent::Configure,
            ));
        }
        let now = Instant::now();
        self.unacked.retain(|(_, _, at)| now.duration_since(*at) < FORGET_AFTER);
        let holder = *MEMBERS.choose(rng).unwrap();
        if rng.gen_ratio(1, 25) {
            self.left.entry(holder).or_default().push(Sending { sent_at: now, answered_at: None });
            self.unacked.retain(|(h, _, _)| *h != holder);
            let op = ShareOp::ReleaseAll { group: GROUP.into(), holder: holder.into() };
            return Some((Command::Share(op), ShareSent::Leave { holder, sent_at: now }));
        }
        if !self.unacked.is_empty() && rng.gen_bool(0.55) {
            let (holder, rec, acquired_at) = self.unacked.swap_remove(rng.gen_range(0..self.unacked.len()));
            let kind = match rng.gen_range(0..100) {
                0..60 => AckKind::Accept,
                60..80 => AckKind::Release,
                80..88 => AckKind::Reject,
                _ => AckKind::Renew,
            };
            match kind {
                AckKind::Renew => self.unacked.push((holder, rec, acquired_at)),
                _ => {
                    self.given_back.entry((holder, rec)).or_default().push(Sending { sent_at: now, answered_at: None })
                }
            }
            match kind {
                AckKind::Accept => self.accept_sent.insert(rec),
                AckKind::Reject => self.reject_sent.insert(rec),
                _ => false,
            };
            let ack = ShareAck { queue: rec.0, partition: rec.1, first: rec.2, last: rec.2, kind };
            let op = ShareOp::Acknowledge { group: GROUP.into(), holder: holder.into(), acks: vec![ack] };
            return Some((
                Command::Share(op),
                ShareSent::Acknowledge { holder, acks: vec![(rec, kind)], sent_at: now },
            ));
        }
        let partitions: Vec<(u64, u64)> = QUEUES
            .iter()
            .flat_map(|q| PARTITIONS.iter().map(move |p| (q, p)))
            .filter_map(|(q, p)| {
                let queue = store.queue_id(q)?;
                Some((queue, store.partition_id(queue, p)?))
            })
            .collect();
        if partitions.is_empty() {
            return None;
        }
        self.acquires_sent += 1;
        *self.pending.entry(holder).or_default() += 1;
        let max_records = rng.gen_range(1..=4);
        let op = ShareOp::Acquire {
            group: GROUP.into(),
            holder: holder.into(),
            partitions: partitions.clone(),
            max_records,
        };
        Some((Command::Share(op), ShareSent::Acquire { holder, partitions, sent_at: now }))
    }

    /// Checks an answer against what earlier answers promised.
    pub fn settle(&mut self, sent: ShareSent, answer: Result<Answer, ProposeError>, violations: &mut Vec<String>) {
        match (sent, answer) {
            (ShareSent::Configure, Ok(Answer::Kv(KvAnswer::Results(_)))) => self.configured = true,
            (ShareSent::Acquire { holder, partitions, sent_at }, Ok(Answer::Share(ShareAnswer::Acquired(got)))) => {
                *self.pending.entry(holder).or_default() -= 1;
                for ((queue, partition), records) in partitions.into_iter().zip(got) {
                    for (offset, count) in records {
                        let rec = (queue, partition, offset);
                        let delivery = Delivery { holder, count, sent_at, answered_at: Instant::now() };
                        self.delivered(rec, delivery, violations);
                    }
                }
            }
            (
                ShareSent::Acknowledge { holder, acks, sent_at },
                Ok(Answer::Share(ShareAnswer::Acknowledged(applied))),
            ) => {
                for ((rec, kind), applied) in acks.into_iter().zip(applied) {
                    answered(self.given_back.get_mut(&(holder, rec)), sent_at);
                    if applied {
                        self.acknowledged += 1;
                        self.applied(holder, rec, kind, sent_at, violations);
                    } else {
                        self.refused(holder, rec, kind, sent_at, violations);
                    }
                }
            }
            (ShareSent::Leave { holder, sent_at }, Ok(Answer::Share(ShareAnswer::Released(_)))) => {
                answered(self.left.get_mut(holder), sent_at)
            }
            (_, Err(_)) => {}
            (_, Ok(other)) => violations.push(format!("a share group call was answered {other:?}")),
        }
    }

    fn delivered(&mut self, rec: Rec, new: Delivery, violations: &mut Vec<String>) {
        self.acquired += 1;
        if new.count == 0 || new.count > LIMIT {
            violations.push(format!("{rec:?} was delivered as delivery {} past the limit of {LIMIT}", new.count));
        }
        if u64::from(new.count) > self.acquires_sent {
            violations.push(format!(
                "{rec:?} was delivered as delivery {} when only {} acquisitions were sent",
                new.count, self.acquires_sent
            ));
        }
        if let Some(at) = self.accepted.get(&rec).filter(|at| **at < new.sent_at) {
            violations.push(format!(
                "{rec:?} was acquired by {} again (delivery {}) after its acceptance was answered at {at:?}",
                new.holder, new.count
            ));
        }
        for old in self.deliveries.get(&rec).into_iter().flatten() {
            let (first, second) = match old.count.cmp(&new.count) {
                std::cmp::Ordering::Less => (old, &new),
                std::cmp::Ordering::Greater => (&new, old),
                std::cmp::Ordering::Equal if old.answered_at <= new.answered_at => (old, &new),
                std::cmp::Ordering::Equal => (&new, old),
            };
            // A give-back sent before the first delivery but answered
            // after it may have been planned after it.
            let gave_back = |sendings: Option<&Vec<Sending>>| {
                sendings.into_iter().flatten().any(|s| s.within(first.sent_at, second.answered_at))
            };
            // A member that leaves returns what it holds uncounted, as
            // Kafka does: the next delivery repeats its count.
            let left = gave_back(self.left.get(first.holder));
            if old.count == new.count && !left {
                violations.push(format!(
                    "{rec:?} was acquired twice as delivery {}: by {} and by {}",
                    new.count, old.holder, new.holder
                ));
                continue;
            }
            let lock_ends_no_sooner = first.sent_at + LOCK;
            let released = left || gave_back(self.given_back.get(&(first.holder, rec)));
            if second.answered_at + STAMP_LEAD < lock_ends_no_sooner && !released {
                violations.push(format!(
                    "{rec:?} was held by two members at once: {} took delivery {} (sent at {:?}), {} was answered \
                     delivery {} at {:?}, before the first lock could end and with nothing given back",
                    first.holder, first.count, first.sent_at, second.holder, second.count, second.answered_at
                ));
            }
        }
        self.unacked.push((new.holder, rec, new.answered_at));
        self.deliveries.entry(rec).or_default().push(new);
    }

    /// An acknowledgement `holder` sent at `sent_at` applied.
    fn applied(
        &mut self,
        holder: &'static str,
        rec: Rec,
        kind: AckKind,
        sent_at: Instant,
        violations: &mut Vec<String>,
    ) {
        let deliveries = self.deliveries.get(&rec).map(Vec::as_slice).unwrap_or_default();
        let mine = deliveries.iter().filter(|d| d.holder == holder).map(|d| d.count).max().unwrap_or(0);
        // Unless an acquisition of its own is unanswered, which may have
        // delivered the record to it again.
        let all_answered = self.pending.get(holder).is_none_or(|n| *n == 0);
        let taken = deliveries.iter().find(|d| d.count > mine && d.answered_at < sent_at);
        if let (Some(other), true) = (taken, all_answered) {
            violations.push(format!(
                "{holder}'s {kind:?} of {rec:?} (its delivery {mine}) applied though {} was answered delivery {} \
                 before it was sent",
                other.holder, other.count
            ));
        }
        if kind == AckKind::Accept {
            self.accepted.entry(rec).or_insert_with(Instant::now);
        }
    }
}

impl ShareModel {
    /// An acknowledgement `holder` sent at `sent_at` was refused: wrongly
    /// if the record was surely still its own when the answer came (its
    /// last delivery answered before the sending, that delivery's lock
    /// unable to have ended, nothing else given back), as when a leader
    /// answers from a store behind its own.
    fn refused(&self, holder: &'static str, rec: Rec, kind: AckKind, sent_at: Instant, violations: &mut Vec<String>) {
        let now = Instant::now();
        let deliveries = self.deliveries.get(&rec).map(Vec::as_slice).unwrap_or_default();
        let Some(last) = deliveries.iter().max_by_key(|d| d.count) else { return };
        let elsewhere = |s: &Sending| s.sent_at != sent_at && s.within(last.sent_at, now);
        let gave_back = self.given_back.get(&(holder, rec)).into_iter().flatten().any(elsewhere)
            || self.left.get(holder).into_iter().flatten().any(|s| s.within(last.sent_at, now));
        let held = last.holder == holder && last.answered_at < sent_at && now + STAMP_LEAD < last.sent_at + LOCK;
        if held && !gave_back && self.pending.get(holder).is_none_or(|n| *n == 0) {
            violations.push(format!(
                "{holder}'s {kind:?} of {rec:?} was refused though it held delivery {} (sent at {:?}) and its lock \
                 could not have ended",
                last.count, last.sent_at
            ));
        }
    }
}

/// Checks the share group's rows on a settled node; answers what broke.
pub fn check(id: u64, store: &Store, model: &ShareModel) -> Vec<String> {
    let mut broke = Vec::new();
    let dead = |rec: &Rec| store.dlq.get(&(rec.0, rec.1, GROUP.to_string(), rec.2));
    for rec in model.accepted.keys() {
        let done = store.cursors.get(&(rec.0, rec.1, GROUP.to_string())).is_some_and(|c| is_done(c, rec.2));
        if !done || dead(rec).is_some() {
            broke.push(format!(
                "node {id}: {rec:?}, whose acceptance was answered, is {}",
                if done { "dead-lettered" } else { "not done" }
            ));
        }
    }
    for ((queue, partition, group), cursor) in store.cursors.iter().filter(|(k, _)| k.2 == GROUP) {
        let end = store.partition(*queue, *partition).map_or(0, |p| p.next_offset);
        for offset in (0..end).filter(|o| is_done(cursor, *o)) {
            let rec = (*queue, *partition, offset);
            let counted = match dead(&rec) {
                Some(row) if model.reject_sent.contains(&rec) || row.failures >= LIMIT => continue,
                Some(row) => Some(row.failures),
                None if model.accept_sent.contains(&rec) || store.is_kafka_hidden(*queue, *partition, offset) => {
                    continue
                }
                None => None,
            };
            broke.push(format!(
                "node {id}: {rec:?} is done for {group} with no acceptance sent: {}",
                match counted {
                    Some(failures) => format!("dead-lettered after {failures} failed deliveries, never rejected"),
                    None => "lost".into(),
                }
            ));
        }
    }
    for (rec, deliveries) in &model.deliveries {
        let key = (rec.0, rec.1, GROUP.to_string());
        let failures = match (dead(rec), store.cursors.get(&key)) {
            (Some(row), _) => row.failures,
            (None, Some(cursor)) if !is_done(cursor, rec.2) => cursor.failures.get(&rec.2).copied().unwrap_or(0),
            _ => continue,
        };
        let seen = deliveries.iter().map(|d| d.count).max().unwrap_or(0);
        // Delivery n follows n - 1 failed ones; a record held now has not
        // failed its current delivery yet (nor has one whose lock ran out
        // before anyone asked for more).
        let held = store.shares.get(&key).is_some_and(|s| s.held.contains_key(&rec.2));
        let least = if held { seen - 1 } else { seen };
        if failures < least {
            broke.push(format!(
                "node {id}: {rec:?} counts {failures} failed deliveries, though delivery {seen} was answered"
            ));
        }
    }
    broke
}

fn is_done(cursor: &CursorRow, offset: u64) -> bool {
    offset < cursor.committed || cursor.done_above.contains(&offset)
}
