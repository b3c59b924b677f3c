//! Pops and acks in the cluster simulator's workload: one consumer group
//! pops the queues' partitions under short leases and acks what it was
//! given (completing most, failing some), every call sent to a node the
//! seed picks and on to the leader. Checked as the answers come:
//!
//! - a message whose completion was answered is never delivered to the
//!   group by a pop called after that answer (an ack commits the cursor
//!   through the message, so nothing at or below it comes again);
//! - a claim delivers its messages in rising offsets;
//! - two claims of one partition for the group never hold it at once: the
//!   later was planned after the earlier's lease ended, unless an ack that
//!   could have released the earlier was sent before the later was
//!   answered. Lease windows are read from the claims themselves (planned
//!   at the expiry minus the fixed lease length, on the one wall clock the
//!   nodes share).

use super::workload::{PushKey, PARTITIONS};
use queen::seams::planner::{AckItem, AckOutcome, AckStatus, Claim, Command, PopRequest, Subscription};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::BTreeMap;
use tokio::time::Instant;

/// The consumer group the workload pops as.
const GROUP: &str = "sim-consumers";
/// Every pop's lease: short, so that some lapse mid-run.
pub const LEASE_US: i64 = 1_000_000;

/// A claim as answered: its lease's window on the planners' clock, and
/// when the answer came.
struct Held {
    lease_id: String,
    planned_us: i64,
    expires_us: i64,
    answered_at: Instant,
}

/// What a pop or an ack was sent with.
pub enum PopSent {
    Pop { called_at: Instant },
    Ack { completes: Vec<(u64, u64, u64)> },
}

#[derive(Default)]
pub struct PopModel {
    /// Claims answered, by (queue id, partition id).
    claims: BTreeMap<(u64, u64), Vec<Held>>,
    /// Claims answered and not acked yet: what an ack may name.
    unacked: Vec<Claim>,
    /// Per (queue id, partition id): the highest offset whose completion
    /// was answered, and when.
    completed: BTreeMap<(u64, u64), (u64, Instant)>,
    /// When an ack naming each lease was first sent.
    ack_sent: BTreeMap<String, Instant>,
    pub delivered: u64,
    pub completions: u64,
}

impl PopModel {
    /// A pop of one of `queues` or an ack the seed draws; an ack only of
    /// messages whose transactionId is known (their push was answered).
    pub fn next(
        &mut self,
        rng: &mut StdRng,
        acked: &BTreeMap<PushKey, (u64, Vec<u8>)>,
        queues: &[&str],
    ) -> (Command, PopSent) {
        if !self.unacked.is_empty() && rng.gen_bool(0.6) {
            let claim = self.unacked.swap_remove(rng.gen_range(0..self.unacked.len()));
            let txn_at = |offset: u64| {
                acked
                    .iter()
                    .find(|((q, p, _), (o, _))| *q == claim.queue && *p == claim.partition && *o == offset)
                    .map(|((_, _, txn), _)| txn.clone())
            };
            let mut items = Vec::new();
            let mut completes = Vec::new();
            // Complete up to a message the seed picks (an ack commits
            // through it), or fail one.
            if let Some(&(offset, _)) = claim.messages.choose(rng) {
                if let Some(txn) = txn_at(offset) {
                    let status = if rng.gen_bool(0.8) { AckStatus::Completed } else { AckStatus::Failed };
                    if status == AckStatus::Completed {
                        completes.push((claim.queue_id, claim.partition_id, offset));
                    }
                    items.push(AckItem {
                        queue_id: claim.queue_id,
                        partition_id: claim.partition_id,
                        transaction_id: txn,
                        group: GROUP.into(),
                        lease_id: Some(claim.lease_id.clone()),
                        status,
                        error: None,
                    });
                }
            }
            if !items.is_empty() {
                self.ack_sent.entry(claim.lease_id.clone()).or_insert_with(Instant::now);
                return (Command::Ack(items), PopSent::Ack { completes });
            }
        }
        let request = PopRequest {
            queue: Some(queues.choose(rng).unwrap().to_string()),
            partition: rng.gen_bool(0.5).then(|| PARTITIONS.choose(rng).unwrap().to_string()),
            namespace: None,
            task: None,
            group: GROUP.into(),
            batch: rng.gen_range(1..=4),
            partitions: 1,
            auto_ack: false,
            subscription: Subscription::All,
            conflation: false,
            lease_us: Some(LEASE_US),
        };
        (Command::Pop(request), PopSent::Pop { called_at: Instant::now() })
    }

    /// Checks a pop's claims against what earlier answers promised.
    pub fn popped(&mut self, called_at: Instant, claims: Vec<Claim>, violations: &mut Vec<String>) {
        let now = Instant::now();
        for claim in claims {
            let at = (claim.queue_id, claim.partition_id);
            self.delivered += claim.messages.len() as u64;
            if claim.messages.windows(2).any(|w| w[0].0 >= w[1].0) {
                violations.push(format!("a claim of {at:?} delivered offsets out of order: {:?}", claim.messages));
            }
            if let Some(&(through, answered)) = self.completed.get(&at) {
                let again = claim.messages.iter().find(|(o, _)| *o <= through);
                if let (Some((offset, attempt)), true) = (again, answered < called_at) {
                    violations.push(format!(
                        "a pop of {at:?} delivered offset {offset} (attempt {attempt}) after the group's completion \
                         through {through} was answered"
                    ));
                }
            }
            let held = Held {
                lease_id: claim.lease_id.clone(),
                planned_us: claim.lease_expires_us - LEASE_US,
                expires_us: claim.lease_expires_us,
                answered_at: now,
            };
            let earlier = self.claims.entry(at).or_default();
            for other in earlier.iter() {
                let (first, second) = if other.planned_us <= held.planned_us { (other, &held) } else { (&held, other) };
                let overlap = second.planned_us < first.expires_us && first.lease_id != second.lease_id;
                let released = self.ack_sent.get(&first.lease_id).is_some_and(|sent| *sent < second.answered_at);
                if overlap && !released {
                    violations.push(format!(
                        "two claims of {at:?} held the group's lease at once: {} planned at {} until {}, and {} \
                         planned at {} with no ack of the first sent before",
                        first.lease_id, first.planned_us, first.expires_us, second.lease_id, second.planned_us
                    ));
                }
            }
            earlier.push(held);
            if !claim.messages.is_empty() {
                self.unacked.push(claim);
            }
        }
    }

    /// Records the completions an ack was answered for.
    pub fn acked(&mut self, completes: Vec<(u64, u64, u64)>, outcomes: &[AckOutcome]) {
        let now = Instant::now();
        for ((queue, partition, offset), outcome) in completes.into_iter().zip(outcomes) {
            if outcome.refused.is_none() {
                self.completions += 1;
                let entry = self.completed.entry((queue, partition)).or_insert((offset, now));
                if offset >= entry.0 {
                    *entry = (offset, now);
                }
            }
        }
    }
}
