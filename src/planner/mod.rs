//! The planner: the only place that decides. A command is checked against the
//! current state (the store plus what the batch in flight has decided) and
//! becomes one entry of deterministic effects.

pub mod apply;
pub(crate) mod cleanup;
pub mod command;
pub(crate) mod consume;
pub(crate) mod cursor;
pub mod effect;
pub(crate) mod groups;
pub(crate) mod held;
pub(crate) mod items;
pub mod kafka_txn;
pub mod kv;
pub(crate) mod locks;
pub(crate) mod overlay;
pub mod producers;
pub(crate) mod push;
pub(crate) mod queues;
pub(crate) mod retention;
pub mod share;
pub mod share_config;
pub(crate) mod streams;
#[cfg(test)]
mod testing;
pub mod timers;
pub(crate) mod topics;
pub(crate) mod transaction;
pub(crate) mod txn;

use crate::log_id::{LogId, SINGLE_NODE};
use crate::store::Store;
use command::{Answer, Command};
use effect::{Entry, EntryBody};
use overlay::Overlay;

/// The most timers one fire entry carries.
const MAX_TIMERS_PER_FIRE: usize = 1000;

pub struct Planner {
    term: u64,
    /// This node's id: with the term, the leader id its entries carry.
    node: u64,
    next_index: u64,
    overlay: Overlay,
    /// Where the next pop starts looking among a queue's partitions.
    rotation: u64,
}

/// A planned command: the entry to write (none when it changes nothing) and
/// the answer to give once the batch it belongs to is durable and applied.
pub struct Planned {
    pub entry: Option<Entry>,
    pub answer: Answer,
}

impl Planner {
    /// A planner leading in `term` as the single node, whose next entry
    /// follows `last`.
    pub fn new(term: u64, last: LogId) -> Self {
        Self { term, node: SINGLE_NODE, next_index: last.index + 1, overlay: Overlay::default(), rotation: 0 }
    }

    /// Leads from now on in `term`, planning the entry after `last`, the
    /// last one the log holds. What an earlier leadership planned and the
    /// store has not applied is forgotten: under raft a lost leadership's
    /// entries may be cut, and never apply.
    pub fn lead(&mut self, (term, node): (u64, u64), last: LogId) {
        assert!(term >= self.term, "a planner leads in term {term} after term {}: terms never go back", self.term);
        let group = self.overlay.group;
        *self = Self { node, rotation: self.rotation, ..Self::new(term, last).in_group(group) };
    }

    /// Plans for raft group `group`: queue and partition ids from the
    /// group's own range, and the leases and streams queries it derives
    /// named in the group (`placement.rs`).
    pub fn in_group(mut self, group: u32) -> Self {
        self.overlay.group = group;
        self
    }

    /// The log id the next entry planned is stamped with: the one the log
    /// gives the entry appended after its last (the log store checks that
    /// indexes rise by one).
    pub fn next_id(&self) -> LogId {
        LogId::new(self.term, self.next_index)
    }

    /// The node this planner leads as.
    pub fn node(&self) -> u64 {
        self.node
    }

    pub fn plan(&mut self, store: &Store, command: Command, timestamp_us: i64) -> Planned {
        let id = self.next_id();
        self.overlay.open_entry(id.index);
        let overlay = &mut self.overlay;
        let (effects, messages, answer) = match command {
            Command::Push(items) => match push::check_max_size(store, overlay, &items) {
                Ok(()) => {
                    let p = push::plan_push(store, overlay, id, timestamp_us, items);
                    (p.effects, p.messages, Answer::Pushed(p.outcomes))
                }
                Err(full) => (vec![], vec![], Answer::QueueFull(full)),
            },
            Command::Configure(cmd) => {
                let (effects, queue_id, options) = queues::plan_configure(store, overlay, &cmd);
                (effects, vec![], Answer::Configured { queue_id, options })
            }
            Command::DeleteQueue { queue } => {
                let effects = queues::plan_delete(store, overlay, &queue);
                let existed = !effects.is_empty();
                (effects, vec![], Answer::Deleted { existed })
            }
            Command::Pop(req) => {
                self.rotation = self.rotation.wrapping_add(1);
                // Derived from the entry, so a replay and every node name it alike.
                let lease_id = id.derived_uuid_in(overlay.group, 0);
                let (effects, claims) = consume::plan_pop(store, overlay, timestamp_us, lease_id, &req, self.rotation);
                (effects, vec![], Answer::Popped(claims))
            }
            Command::Ack(items) => {
                let (effects, outcomes) = consume::plan_acks(store, overlay, timestamp_us, &items);
                (effects, vec![], Answer::Acked(outcomes))
            }
            Command::SeekGroup { queue, group, to } => {
                let effects = groups::plan_seek(store, overlay, &queue, &group, to);
                let partitions = effects.len();
                (effects, vec![], Answer::GroupChanged { partitions })
            }
            Command::DeleteGroup { queue, group, metadata } => {
                let (effects, partitions) = groups::plan_delete(store, overlay, queue.as_deref(), &group, metadata);
                (effects, vec![], Answer::GroupChanged { partitions })
            }
            Command::Resubscribe { group, from_us } => {
                let effects = groups::plan_resubscribe(store, overlay, &group, from_us, timestamp_us);
                let partitions = effects.len();
                (effects, vec![], Answer::GroupChanged { partitions })
            }
            Command::Transaction(bundle) => {
                let p = transaction::plan_bundle(store, overlay, id, timestamp_us, bundle);
                (p.effects, p.messages, Answer::Transaction(p.answer))
            }
            Command::Timers(ops) => {
                let (effects, results) = timers::plan_timers(store, overlay, id, timestamp_us, &ops);
                (effects, vec![], Answer::Timers(results))
            }
            Command::FireTimers => {
                let (effects, messages, fired) =
                    timers::plan_fire(store, overlay, id, timestamp_us, MAX_TIMERS_PER_FIRE);
                (effects, messages, Answer::Fired { timers: fired })
            }
            Command::Locks(ops) => {
                let (effects, results) = locks::plan_locks(store, overlay, timestamp_us, &ops);
                (effects, vec![], Answer::Locks(results))
            }
            Command::Kv(ops) => {
                let (effects, answer) = kv::plan_kv(store, overlay, timestamp_us, &ops);
                (effects, vec![], Answer::Kv(answer))
            }
            Command::CreateTopic { queue, partitions, options } => {
                let existed = overlay.queue_id(store, &queue).is_some();
                let effects =
                    if existed { vec![] } else { topics::plan_create(store, overlay, &queue, partitions, options) };
                let created = effects.len().saturating_sub(1);
                (effects, vec![], Answer::PartitionsCreated { existed, created })
            }
            Command::AddPartitions { queue, total } => {
                let existed = overlay.queue_id(store, &queue).is_some();
                let effects = topics::plan_grow(store, overlay, &queue, total);
                let created = effects.len();
                (effects, vec![], Answer::PartitionsCreated { existed, created })
            }
            Command::CommitOffsets(commits) => {
                let effects = topics::plan_commits(store, overlay, commits);
                let partitions = effects.len();
                (effects, vec![], Answer::GroupChanged { partitions })
            }
            Command::SweepKv => {
                let effects = kv::plan_sweep(store, overlay, timestamp_us);
                let rows = effects.len();
                (effects, vec![], Answer::Swept { rows })
            }
            Command::Retain { partitions, txn_window_min_s } => {
                let effects = retention::plan_retain(store, overlay, &partitions, timestamp_us, txn_window_min_s);
                let partitions = effects.len();
                (effects, vec![], Answer::Retained { partitions })
            }
            Command::ExpireDedup { partitions, txn_window_min_s } => {
                // A member that reads catalogue 4 could not apply the effect.
                let effects = match overlay.catalogue(store) >= 5 {
                    true => retention::plan_expire_dedup(store, &partitions, timestamp_us, txn_window_min_s),
                    false => vec![],
                };
                let partitions = effects.len();
                (effects, vec![], Answer::Retained { partitions })
            }
            Command::ExpireProducers { expiry_us } => {
                let effects = producers::plan_expire(store, overlay, timestamp_us, expiry_us);
                let rows = effects.len();
                (effects, vec![], Answer::Swept { rows })
            }
            Command::CleanupPartitions { partitions, idle_us } => {
                let effects = cleanup::plan_cleanup(store, overlay, &partitions, timestamp_us, idle_us);
                let partitions = effects.len();
                (effects, vec![], Answer::CleanedUp { partitions })
            }
            Command::Redeliver { queue, partition, offset, group } => {
                let effects = groups::plan_redeliver(store, overlay, (queue, partition, offset), group.as_deref());
                let partitions = effects.len();
                (effects, vec![], Answer::GroupChanged { partitions })
            }
            Command::Streams(op) => {
                let (effects, messages, answer) = streams::plan(store, overlay, id, timestamp_us, *op);
                (effects, messages, Answer::Streams(answer))
            }
            Command::KafkaTxn(op) => {
                let p = kafka_txn::plan(store, overlay, id, timestamp_us, *op);
                (p.effects, p.messages, Answer::KafkaTxn(p.answer))
            }
            Command::Share(op) => {
                let (effects, answer) = share::plan(store, overlay, timestamp_us, &op);
                (effects, vec![], Answer::Share(answer))
            }
            Command::ExtendLease { lease_id } => {
                let (effects, renewed, expires_us) = consume::plan_extend(store, overlay, timestamp_us, &lease_id);
                (effects, vec![], Answer::Extended { renewed, expires_us })
            }
        };
        if effects.is_empty() {
            return Planned { entry: None, answer };
        }
        self.next_index += 1;
        Planned {
            entry: Some(Entry { id, leader: self.node, body: EntryBody { timestamp_us, effects }, messages }),
            answer,
        }
    }

    /// The store holds every entry up to its applied index, so the planner
    /// reads their decisions from it and forgets its own copy. Called with
    /// the store's lock held, so the overlay keeps exactly what the store
    /// does not hold yet.
    pub fn caught_up_with(&mut self, store: &Store) {
        let applied = store.applied.index;
        self.overlay.forget_through(applied);
        // The overlay's consistency with the store: once every entry planned
        // is applied, a decision still held was made by no entry, and the
        // next command would plan against a state that never was. A score
        // of emptiness checks per chunk: on in release builds too.
        if applied + 1 >= self.next_index {
            if let Some(held) = self.overlay.held() {
                panic!("invariant broken: overlay inconsistent with the store: every entry through {applied} is applied and the overlay still holds {held} decisions");
            }
        }
    }
}
