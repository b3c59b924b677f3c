//! Planning the streams API (`/streams/v1/*`, which the queen-mq client's
//! `queen.streams` runtime calls): registering a query, and a cycle, which
//! writes a partition's operator state, pushes the sink's messages and acks
//! the source lease as one entry, all or nothing.
//!
//! Where the state lives: rows of the KV keyspace under two namespaces the
//! broker reserves (`internal_kv::STREAMS_QUERIES`, `STREAMS_STATE`), not a
//! keyspace of its own. KV rows are already written by effects every node
//! applies alike, checkpointed, carried in snapshots and scrubbed, and read
//! by key range, which is all state needs; a keyspace of its own would need
//! its own effects, checkpoint table and snapshot handling for the same
//! thing. A state row's key is "query id \0 partition \0 state key", so one
//! partition's rows, and one query's, are each one key range.
//!
//! A cycle is a transaction bundle (`planner/transaction.rs`) with the state
//! writes as its KV operations, so it is fenced exactly as a transaction is:
//! its source lease must be live, and its ack must move the cursor (a retry
//! of a cycle that committed is refused whole, so nothing applies twice). A
//! cycle with no ack (the idle flush of windows that closed) is fenced by its
//! deletes instead: each must find its row, so a retried flush that already
//! committed is refused, and never emits its windows twice.

use super::effect::Effect;
use super::items::{AckItem, AckOutcome, PushItem, PushOutcome};
use super::kv::{self, Expiry, KvKind, KvOp};
use super::overlay::Overlay;
use super::transaction::{self, Bundle, BundleAnswer, Refusal};
use crate::internal_kv::{STREAMS_QUERIES, STREAMS_STATE};
use crate::log_id::LogId;
use crate::qlog::message_record::MessageRecord;
use crate::store::Store;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum StreamsOp {
    Register(Register),
    Cycle(Cycle),
}

/// `POST /streams/v1/queries`: idempotent by name and config hash.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Register {
    pub name: String,
    pub source_queue: String,
    pub sink_queue: Option<String>,
    pub config_hash: String,
    /// Wipe the query's state and take the new config hash.
    pub reset: bool,
}

/// What a query's row holds (as JSON, the KV row's value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRow {
    pub query_id: String,
    pub name: String,
    pub source_queue: String,
    pub sink_queue: Option<String>,
    pub config_hash: String,
    pub created_us: i64,
}

/// `POST /streams/v1/cycle` for one source partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cycle {
    pub query_id: String,
    /// The partition as the client names it (its `partitionId`).
    pub partition: String,
    pub state: Vec<StateOp>,
    pub pushes: Vec<PushItem>,
    /// The source ack, with its lease; none for an idle flush.
    pub ack: Option<AckItem>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum StateOp {
    /// `value` is JSON text.
    Upsert {
        key: String,
        value: String,
    },
    Delete {
        key: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum StreamsAnswer {
    Registered {
        query_id: String,
        fresh: bool,
        reset: bool,
    },
    /// The name is registered under another config hash, and no reset was asked.
    HashMismatch {
        query_id: String,
        registered: String,
    },
    CycleCommitted {
        pushes: Vec<PushOutcome>,
        ack: Option<AckOutcome>,
        state_ops: usize,
    },
    /// The cycle named a query that is not registered (or was reset since).
    UnknownQuery,
    CycleRolledBack(Refusal),
}

/// The KV key (within `STREAMS_QUERIES`) of a query's row, by name.
fn by_name(name: &str) -> String {
    format!("name\0{name}")
}

/// The KV key (within `STREAMS_QUERIES`) naming a query id's query.
fn by_id(query_id: &str) -> String {
    format!("id\0{query_id}")
}

/// The start of a partition's state keys within `STREAMS_STATE`; with an
/// empty partition, of every partition's of the query.
pub fn state_prefix(query_id: &str, partition: &str) -> String {
    if partition.is_empty() {
        format!("{query_id}\0")
    } else {
        format!("{query_id}\0{partition}\0")
    }
}

/// The registered query named `name`.
pub fn query_by_name(store: &Store, overlay: &Overlay, name: &str, now_us: i64) -> Option<QueryRow> {
    let row = overlay.kv_row(store, &kv::row_key(STREAMS_QUERIES, &by_name(name)))?;
    row.live(now_us).then(|| serde_json::from_str(&row.value).ok()).flatten()
}

/// Whether `query_id` names a query the store holds (a read outside the
/// planner, which has no overlay).
pub fn registered(store: &Store, query_id: &str, now_us: i64) -> bool {
    store.kv.get(&kv::row_key(STREAMS_QUERIES, &by_id(query_id))).is_some_and(|r| r.live(now_us))
}

/// Whether `query_id` names a registered query.
pub fn query_exists(store: &Store, overlay: &Overlay, query_id: &str, now_us: i64) -> bool {
    overlay.kv_row(store, &kv::row_key(STREAMS_QUERIES, &by_id(query_id))).is_some_and(|r| r.live(now_us))
}

pub fn plan(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    now_us: i64,
    op: StreamsOp,
) -> (Vec<Effect>, Vec<MessageRecord>, StreamsAnswer) {
    match op {
        StreamsOp::Register(r) => {
            let (effects, answer) = plan_register(store, overlay, id, now_us, r);
            (effects, vec![], answer)
        }
        StreamsOp::Cycle(c) => plan_cycle(store, overlay, id, now_us, c),
    }
}

fn put(ns: &str, key: String, value: String) -> KvOp {
    KvOp {
        ns: ns.to_string(),
        kind: KvKind::Put { key, value, expiry: Expiry::Forever, expect: None },
        required: false,
    }
}

fn delete(ns: &str, key: String, required: bool) -> KvOp {
    KvOp { ns: ns.to_string(), kind: KvKind::Delete { key, expect: None }, required }
}

fn plan_register(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    now_us: i64,
    r: Register,
) -> (Vec<Effect>, StreamsAnswer) {
    let existing = query_by_name(store, overlay, &r.name, now_us);
    let mut ops = Vec::new();
    let (query_id, fresh, reset) = match existing {
        Some(q) if !r.reset => {
            if q.config_hash != r.config_hash {
                return (vec![], StreamsAnswer::HashMismatch { query_id: q.query_id, registered: q.config_hash });
            }
            // The same chain registered again (a restart, another worker):
            // nothing changes.
            return (vec![], StreamsAnswer::Registered { query_id: q.query_id, fresh: false, reset: false });
        }
        Some(old) => {
            // A reset takes a new id, so a worker still running the old
            // chain is fenced out (its cycles name a query that is gone),
            // and wipes the old id's state.
            for key in state_keys(store, overlay, &state_prefix(&old.query_id, ""), now_us) {
                ops.push(delete(STREAMS_STATE, key, false));
            }
            ops.push(delete(STREAMS_QUERIES, by_id(&old.query_id), false));
            (id.derived_uuid_in(overlay.group, 0), false, true)
        }
        None => (id.derived_uuid_in(overlay.group, 0), true, false),
    };
    let row = QueryRow {
        query_id: query_id.clone(),
        name: r.name.clone(),
        source_queue: r.source_queue,
        sink_queue: r.sink_queue,
        config_hash: r.config_hash,
        created_us: now_us,
    };
    let json = serde_json::to_string(&row).expect("a query row serializes");
    ops.push(put(STREAMS_QUERIES, by_name(&r.name), json));
    ops.push(put(STREAMS_QUERIES, by_id(&query_id), serde_json::to_string(&r.name).expect("a name serializes")));
    let (effects, _) = kv::plan_kv(store, overlay, now_us, &ops);
    (effects, StreamsAnswer::Registered { query_id, fresh, reset })
}

/// The live state keys (within `STREAMS_STATE`) under `prefix`, as the
/// store and the batch in flight hold them.
pub fn state_keys(store: &Store, overlay: &Overlay, prefix: &str, now_us: i64) -> Vec<String> {
    let full = kv::row_key(STREAMS_STATE, prefix);
    let mut keys: Vec<String> = store
        .kv
        .range(full.clone()..)
        .take_while(|(k, _)| k.starts_with(&full))
        .map(|(k, _)| k.clone())
        .chain(overlay.kv_keys_with_prefix(&full))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.retain(|k| overlay.kv_row(store, k).is_some_and(|r| r.live(now_us)));
    keys.into_iter().map(|k| k[STREAMS_STATE.len() + 1..].to_string()).collect()
}

fn plan_cycle(
    store: &Store,
    overlay: &mut Overlay,
    id: LogId,
    now_us: i64,
    c: Cycle,
) -> (Vec<Effect>, Vec<MessageRecord>, StreamsAnswer) {
    if !query_exists(store, overlay, &c.query_id, now_us) {
        return (vec![], vec![], StreamsAnswer::UnknownQuery);
    }
    let prefix = state_prefix(&c.query_id, &c.partition);
    // Without an ack, the deletes are the cycle's fence (see the top).
    let fence = c.ack.is_none();
    let state_ops = c.state.len();
    let kv = c
        .state
        .into_iter()
        .map(|op| match op {
            StateOp::Upsert { key, value } => put(STREAMS_STATE, format!("{prefix}{key}"), value),
            StateOp::Delete { key } => delete(STREAMS_STATE, format!("{prefix}{key}"), fence),
        })
        .collect();
    let required_leases = c.ack.iter().filter_map(|a| a.lease_id.clone()).collect();
    let bundle = Bundle { pushes: c.pushes, acks: c.ack.into_iter().collect(), required_leases, kv, timers: vec![] };
    let planned = transaction::plan_bundle(store, overlay, id, now_us, bundle);
    let answer = match planned.answer {
        BundleAnswer::Committed { pushes, acks, .. } => {
            StreamsAnswer::CycleCommitted { pushes, ack: acks.into_iter().next(), state_ops }
        }
        BundleAnswer::RolledBack(refusal) => StreamsAnswer::CycleRolledBack(refusal),
    };
    (planned.effects, planned.messages, answer)
}

/// A partition's state rows under `prefix` as (state key, JSON text,
/// updated time), in key order: what `POST /streams/v1/state/get` reads.
pub fn read_state(store: &Store, query_id: &str, partition: &str, now_us: i64) -> Vec<(String, String, i64)> {
    let full = kv::row_key(STREAMS_STATE, &state_prefix(query_id, partition));
    store
        .kv
        .range(full.clone()..)
        .take_while(|(k, _)| k.starts_with(&full))
        .filter(|(_, r)| r.live(now_us))
        .map(|(k, r)| (k[full.len()..].to_string(), r.value.clone(), r.updated_us))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{AckStatus, Answer, Command};
    use crate::planner::testing::{claimed, fresh, one_message_applied, plan as plan_batch, pop, run_at, settle};

    fn register(name: &str, hash: &str, reset: bool) -> Command {
        Command::Streams(Box::new(StreamsOp::Register(Register {
            name: name.into(),
            source_queue: "q".into(),
            sink_queue: None,
            config_hash: hash.into(),
            reset,
        })))
    }

    fn registered(answer: Answer) -> (String, bool, bool) {
        match answer {
            Answer::Streams(StreamsAnswer::Registered { query_id, fresh, reset }) => (query_id, fresh, reset),
            other => panic!("register answered {other:?}"),
        }
    }

    #[test]
    fn a_registration_is_idempotent_by_its_config_hash_and_a_reset_wipes_state() {
        let (mut store, mut planner) = fresh();
        let (id, fresh, _) = registered(run_at(&mut planner, &mut store, 1_000, register("s", "h1", false)));
        assert!(fresh);
        let (again, fresh, _) = registered(run_at(&mut planner, &mut store, 2_000, register("s", "h1", false)));
        assert_eq!((again.as_str(), fresh), (id.as_str(), false));
        let mismatch = run_at(&mut planner, &mut store, 3_000, register("s", "h2", false));
        assert!(matches!(mismatch, Answer::Streams(StreamsAnswer::HashMismatch { .. })), "{mismatch:?}");

        let cycle = Cycle {
            query_id: id.clone(),
            partition: "p".into(),
            state: vec![StateOp::Upsert { key: "k".into(), value: "1".into() }],
            pushes: vec![],
            ack: None,
        };
        let answer =
            run_at(&mut planner, &mut store, 4_000, Command::Streams(Box::new(StreamsOp::Cycle(cycle.clone()))));
        assert!(matches!(answer, Answer::Streams(StreamsAnswer::CycleCommitted { state_ops: 1, .. })), "{answer:?}");
        assert_eq!(read_state(&store, &id, "p", 5_000).len(), 1);

        let (new_id, _, reset) = registered(run_at(&mut planner, &mut store, 6_000, register("s", "h2", true)));
        assert!(reset && new_id != id);
        assert!(read_state(&store, &id, "p", 7_000).is_empty(), "the reset wiped the old id's state");
        let stale = run_at(&mut planner, &mut store, 8_000, Command::Streams(Box::new(StreamsOp::Cycle(cycle))));
        assert!(matches!(stale, Answer::Streams(StreamsAnswer::UnknownQuery)), "the old id is fenced out");
    }

    #[test]
    fn a_cycle_applies_whole_once_and_a_lease_that_expired_fences_it() {
        let (mut store, mut planner) = one_message_applied();
        let (id, _, _) = registered(run_at(&mut planner, &mut store, 1_500, register("s", "h", false)));
        let popped = plan_batch(&mut planner, &store, 2, pop("g"));
        settle(&mut store, &popped);
        planner.caught_up_with(&store);
        let claim = claimed(&popped);
        let ack = AckItem {
            queue_id: claim.queue_id,
            partition_id: claim.partition_id,
            transaction_id: "t1".into(),
            group: "g".into(),
            lease_id: Some(claim.lease_id.clone()),
            status: AckStatus::Completed,
            error: None,
        };
        let cycle = |v: &str| {
            Command::Streams(Box::new(StreamsOp::Cycle(Cycle {
                query_id: id.clone(),
                partition: "p".into(),
                state: vec![StateOp::Upsert { key: "sum".into(), value: v.into() }],
                pushes: vec![],
                ack: Some(ack.clone()),
            })))
        };
        // Past the lease: refused whole, the state untouched.
        let late = run_at(&mut planner, &mut store, claim.lease_expires_us + 1, cycle("9"));
        assert!(matches!(late, Answer::Streams(StreamsAnswer::CycleRolledBack(Refusal::LeaseGone { .. }))), "{late:?}");
        assert!(read_state(&store, &id, "p", claim.lease_expires_us + 2).is_empty());

        // A fresh claim, a cycle that commits, and its retry refused.
        let popped = plan_batch(&mut planner, &store, claim.lease_expires_us as u64 / 1_000 + 10, pop("g"));
        settle(&mut store, &popped);
        planner.caught_up_with(&store);
        let claim = claimed(&popped);
        let now = claim.lease_expires_us - 1_000;
        let ack2 = AckItem { lease_id: Some(claim.lease_id.clone()), ..ack.clone() };
        let with = |v: &str| {
            Command::Streams(Box::new(StreamsOp::Cycle(Cycle {
                query_id: id.clone(),
                partition: "p".into(),
                state: vec![StateOp::Upsert { key: "sum".into(), value: v.into() }],
                pushes: vec![],
                ack: Some(ack2.clone()),
            })))
        };
        let first = run_at(&mut planner, &mut store, now, with("1"));
        assert!(matches!(first, Answer::Streams(StreamsAnswer::CycleCommitted { .. })), "{first:?}");
        let retry = run_at(&mut planner, &mut store, now + 1, with("2"));
        assert!(matches!(retry, Answer::Streams(StreamsAnswer::CycleRolledBack(_))), "{retry:?}");
        let rows = read_state(&store, &id, "p", now + 2);
        assert_eq!(rows[0].1, "1", "the retry wrote nothing");
    }
}
