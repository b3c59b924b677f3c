//! Planning `POST /api/v1/transaction`: pushes, acks fenced by their leases,
//! KV operations and timers, as one entry that applies whole or not at all. Any
//! refusal (a duplicate push, an ack whose lease is gone, a lost required KV
//! precondition, a required lease that expired) restores the overlay as it
//! was, so nothing of the bundle is seen by the rest of the batch.

use super::consume;
use super::effect::Effect;
use super::items::{AckItem, AckOutcome, PushItem, PushOutcome, Refused, REFUSED_ALREADY_COMMITTED};
use super::kv::{self, KvAnswer, KvOp, KvReason, KvResult};
use super::overlay::Overlay;
use super::push;
use super::timers::{self, TimerOp, TimerResult};
use crate::log_id::LogId;

use crate::qlog::message_record::MessageRecord;
use crate::store::rows::KvRow;
use crate::store::Store;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Bundle {
    pub pushes: Vec<PushItem>,
    pub acks: Vec<AckItem>,
    /// Leases that must all be live when the bundle commits.
    pub required_leases: Vec<String>,
    pub kv: Vec<KvOp>,
    pub timers: Vec<TimerOp>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum BundleAnswer {
    Committed { pushes: Vec<PushOutcome>, acks: Vec<AckOutcome>, kv: Vec<KvResult>, timers: Vec<TimerResult> },
    RolledBack(Refusal),
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Refusal {
    /// A pushed message's transactionId is already stored in its partition.
    Duplicate { item: usize, offset: u64 },
    /// An ack's message is not leased by the bundle, or already acknowledged.
    RejectedAck { ack: usize, why: Refused },
    /// A lease in `requiredLeases` is not live.
    LeaseGone { lease: String },
    /// A required KV operation lost.
    KvPrecondition { op: usize, reason: KvReason, row: Option<KvRow> },
    /// The pushes would take a queue past its `maxSize`.
    QueueFull(push::QueueFull),
}

pub struct Planned {
    pub effects: Vec<Effect>,
    pub messages: Vec<MessageRecord>,
    pub answer: BundleAnswer,
}

pub fn plan_bundle(store: &Store, overlay: &mut Overlay, id: LogId, now_us: i64, bundle: Bundle) -> Planned {
    let before = overlay.clone();
    match plan(store, overlay, id, now_us, bundle) {
        Ok(planned) => planned,
        Err(refusal) => {
            *overlay = before;
            Planned { effects: vec![], messages: vec![], answer: BundleAnswer::RolledBack(refusal) }
        }
    }
}

fn plan(store: &Store, overlay: &mut Overlay, id: LogId, now_us: i64, bundle: Bundle) -> Result<Planned, Refusal> {
    for lease in &bundle.required_leases {
        if overlay.lease_holders(store, lease).is_empty() || !lease_live(store, overlay, lease, now_us) {
            return Err(Refusal::LeaseGone { lease: lease.clone() });
        }
    }
    for (item, p) in bundle.pushes.iter().enumerate() {
        let stored = overlay.queue_id(store, &p.queue).and_then(|q| {
            let part = overlay.partition_id(store, q, &p.partition)?;
            overlay.dedup(store, q, part, &p.dedup_hash()?)
        });
        if let Some(offset) = stored {
            return Err(Refusal::Duplicate { item, offset });
        }
    }
    push::check_max_size(store, overlay, &bundle.pushes).map_err(Refusal::QueueFull)?;
    let pushed = push::plan_push(store, overlay, id, now_us, bundle.pushes);
    let mut effects = pushed.effects;

    // A lease-less ack borrows the bundle's lease when there is exactly one.
    let mut leases: Vec<&String> =
        bundle.required_leases.iter().chain(bundle.acks.iter().filter_map(|a| a.lease_id.as_ref())).collect();
    leases.sort_unstable();
    leases.dedup();
    let lent = (leases.len() == 1).then(|| leases[0].clone());
    let acks: Vec<AckItem> = bundle
        .acks
        .into_iter()
        .map(|mut a| {
            if a.lease_id.is_none() {
                a.lease_id = lent.clone();
            }
            a
        })
        .collect();
    let (ack_effects, acked) = consume::plan_acks(store, overlay, now_us, &acks);
    // The ack fences the bundle: one whose message is already done (a retry
    // of a bundle that committed) refuses it, or its writes would apply twice.
    let refusal = |o: &AckOutcome| o.refused.or(o.noop.then_some(Refused(REFUSED_ALREADY_COMMITTED)));
    if let Some((ack, why)) = acked.iter().enumerate().find_map(|(i, o)| refusal(o).map(|w| (i, w))) {
        return Err(Refusal::RejectedAck { ack, why });
    }
    effects.extend(ack_effects);

    let (kv_effects, answer) = kv::plan_kv(store, overlay, now_us, &bundle.kv);
    let kv = match answer {
        KvAnswer::Results(r) => r,
        KvAnswer::Precondition { failed_index, reason, row } => {
            return Err(Refusal::KvPrecondition { op: failed_index, reason, row })
        }
    };
    effects.extend(kv_effects);
    let (timer_effects, timers) = timers::plan_timers(store, overlay, id, now_us, &bundle.timers);
    effects.extend(timer_effects);
    let answer = BundleAnswer::Committed { pushes: pushed.outcomes, acks: acked, kv, timers };
    Ok(Planned { effects, messages: pushed.messages, answer })
}

fn lease_live(store: &Store, overlay: &Overlay, lease: &str, now_us: i64) -> bool {
    overlay
        .lease_holders(store, lease)
        .iter()
        .filter_map(|k| overlay.cursor(store, k))
        .any(|c| c.lease.is_some_and(|l| l.id == lease && l.expires_us > now_us))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{AckStatus, Answer, Command};
    use crate::planner::testing::{ack, claimed, one_message_applied, plan as plan_batch, pop, run_at, settle};

    #[test]
    fn a_bundle_retried_after_its_ack_committed_is_refused_whole() {
        let (mut store, mut planner) = one_message_applied();
        let popped = plan_batch(&mut planner, &store, 2, pop("g"));
        settle(&mut store, &popped);
        planner.caught_up_with(&store);
        let claim = claimed(&popped);
        let Command::Ack(acks) = ack(&claim, "t1", AckStatus::Completed) else { unreachable!() };
        let bundle = Bundle { pushes: vec![], acks, required_leases: vec![], kv: vec![], timers: vec![] };
        let first = run_at(&mut planner, &mut store, 3_000, Command::Transaction(bundle.clone()));
        assert!(matches!(first, Answer::Transaction(BundleAnswer::Committed { .. })), "{first:?}");
        // A completion below the cursor is a no-op for a plain ack; in a
        // bundle it is the fence, so the retry writes nothing.
        let retry = run_at(&mut planner, &mut store, 4_000, Command::Transaction(bundle));
        let Answer::Transaction(BundleAnswer::RolledBack(Refusal::RejectedAck { why, .. })) = retry else {
            panic!("the retry answered {retry:?}")
        };
        assert_eq!(why, Refused(REFUSED_ALREADY_COMMITTED));
    }
}
