//! `/streams/v1/*`: the three routes the queen-mq client's streams runtime
//! (`queen.streams`) calls, in the shapes it reads. Registering a query and
//! committing a cycle are planner commands (`planner/streams.rs`); reading
//! state reads the store behind the read gate.
//!
//! Answers follow the client: a 409 for a config hash that does not match
//! (the client turns it into its "pass reset=True" hint); a cycle that was
//! refused whole (its lease expired, its ack already committed, a fenced
//! delete) is a 200 with `success: false`, as the broker the client was
//! written for answered, and the client raises `StreamsCycleFailed` with
//! the body. A body the route cannot read is a 400, an unknown query a 404,
//! each `{error, code}`.

use super::auth::ProducerSub;
use super::body::{json_object, objects, Fields};
use super::error::ApiError;
use super::ids::{iso_time, message_uuid, parse_partition_uuid, partition_uuid, payload_json};
use super::{ack, push};
use crate::node::Node;
use crate::planner::items::{REFUSED_UNKNOWN_MESSAGE, REFUSED_UNRESOLVABLE};
use crate::planner::streams::{self, Cycle, Register, StateOp, StreamsAnswer, StreamsOp};
use crate::planner::transaction::Refusal;
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn unknown_query(query_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_query",
        format!("no streams query has id {query_id} (register it with POST /streams/v1/queries)"),
    )
}

/// The partition as state keys name it: a partition id of ours in its one
/// canonical spelling (a framed pop names it by a packed number), anything
/// else as sent.
fn canonical_partition(text: &str) -> String {
    parse_partition_uuid(text).map_or_else(|| text.to_string(), |(q, p)| partition_uuid(q, p))
}

/// A streams call whose queues lie in several raft groups: one cycle is
/// one entry, atomic because one group applies it.
fn spans_groups(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "stream_spans_groups",
        format!(
            "{what} in another raft group than its source queue (QUEEN_RAFT_GROUPS places each queue in one); \
             a cycle is atomic within one group"
        ),
    )
}

/// `POST /streams/v1/queries`.
pub async fn register(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let reset = match body.get("reset") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(f.mistyped("reset", "a boolean")),
    };
    let register = Register {
        name: f.name_str("name")?.to_string(),
        source_queue: f.name_str("source_queue")?.to_string(),
        sink_queue: f.opt_str("sink_queue")?.filter(|s| !s.is_empty()).map(str::to_string),
        config_hash: f.name_str("config_hash")?.to_string(),
        reset,
    };
    let (name, hash) = (register.name.clone(), register.config_hash.clone());
    let group = node.group_of(&register.source_queue);
    if register.sink_queue.as_deref().is_some_and(|sink| !std::ptr::eq(node.group_of(sink), group)) {
        return Err(spans_groups("the sink queue is"));
    }
    match group.replicator.ask(Typed::streams(StreamsOp::Register(register))).await? {
        StreamsAnswer::Registered { query_id, fresh, reset } => Ok((
            StatusCode::OK,
            Json(json!({
                "success": true, "query_id": query_id, "name": name, "config_hash": hash,
                "fresh": fresh, "reset": reset,
            })),
        )),
        StreamsAnswer::HashMismatch { query_id, registered } => Ok((
            StatusCode::CONFLICT,
            Json(json!({
                "success": false, "code": "config_hash_mismatch", "query_id": query_id, "name": name,
                "error": format!("config_hash mismatch: query {name} is registered with {registered}, not {hash}"),
                "registered_config_hash": registered,
            })),
        )),
        other => unreachable!("invariant broken: a streams registration answered {other:?}"),
    }
}

/// `POST /streams/v1/state/get`: `{query_id, partition_id, keys,
/// key_prefix?, ripe_at_or_before?}` → `{success, rows: [{key, value,
/// updated_at}]}`. No keys is every row of the partition; `ripe_at_or_before`
/// keeps the rows whose window (`value.windowEnd`, epoch ms) ended then or
/// before, as the idle flush asks.
pub async fn state_get(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let query_id = f.name_str("query_id")?;
    let partition = canonical_partition(f.name_str("partition_id")?);
    let keys: Vec<&str> = match body.get("keys") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a
            .iter()
            .map(|k| k.as_str().ok_or_else(|| f.mistyped("keys", "an array of strings")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(f.mistyped("keys", "an array of strings")),
    };
    let prefix = f.opt_str("key_prefix")?.unwrap_or("");
    let ripe = match body.get("ripe_at_or_before") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64().ok_or_else(|| f.mistyped("ripe_at_or_before", "a number (epoch ms)"))?),
    };
    // Behind the gate: the state a worker reads holds every cycle committed
    // before it asked, its own last one included.
    // A query lives in its source queue's group, which its id names.
    let group = node.group_of_derived(query_id);
    group.view.gate().await?;
    let store = group.view.local();
    let now_us = chrono::Utc::now().timestamp_micros();
    if !streams::registered(&store, query_id, now_us) {
        return Err(unknown_query(query_id));
    }
    let rows: Vec<Value> = streams::read_state(&store, query_id, &partition, now_us)
        .into_iter()
        .filter(|(key, _, _)| key.starts_with(prefix) && (keys.is_empty() || keys.contains(&key.as_str())))
        .map(|(key, value, updated_us)| (key, payload_json(value.as_bytes()), updated_us))
        .filter(|(_, value, _)| {
            ripe.is_none_or(|r| value.get("windowEnd").and_then(Value::as_f64).is_some_and(|end| end <= r))
        })
        .map(|(key, value, updated_us)| json!({"key": key, "value": value, "updated_at": iso_time(updated_us)}))
        .collect();
    Ok(Json(json!({"success": true, "rows": rows})))
}

/// `POST /streams/v1/cycle`: `{query_id, partition_id, consumer_group,
/// state_ops: [{type: upsert|delete, key, value?}], push_items: [{queue,
/// partition?, payload}], ack: {transactionId, leaseId, status, count} |
/// null, release_lease}`, as one entry.
pub async fn cycle(
    State(node): State<Arc<Node>>,
    producer: Option<Extension<ProducerSub>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let producer = ProducerSub::of(producer);
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let query_id = f.name_str("query_id")?.to_string();
    let partition_text = f.name_str("partition_id")?.to_string();
    let group = f.opt_str("consumer_group")?.unwrap_or("").to_string();
    let list = |name: &str| match body.get(name) {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(a)) => objects(a, name),
        Some(_) => Err(f.mistyped(name, "an array")),
    };
    let mut state = Vec::new();
    for op in list("state_ops")? {
        let key = op.opt_str("key")?.ok_or_else(|| op.missing("key"))?.to_string();
        state.push(match op.opt_str("type")? {
            Some("upsert") => {
                let value = op.map.get("value").unwrap_or(&Value::Null);
                StateOp::Upsert { key, value: value.to_string() }
            }
            Some("delete") => StateOp::Delete { key },
            _ => return Err(op.mistyped("type", "upsert or delete")),
        });
    }
    let mut sealer = node.sealer();
    let items = list("push_items")?;
    let mut pushes = Vec::with_capacity(items.len());
    for item in &items {
        pushes.push(push::push_item(item, &node.settings, &mut sealer, producer.as_deref())?);
    }
    let ack = match body.get("ack") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => {
            // The ack names neither partition nor group: the cycle does.
            let mut a: Map<String, Value> = a.clone();
            a.insert("partitionId".into(), json!(partition_text));
            a.insert("consumerGroup".into(), json!(group));
            match ack::item(&Fields::new(&a, "ack"), None)? {
                Ok(item) => Some(item),
                Err(why) => return Ok(Json(rolled_back(&query_id, &partition_text, why, "rejected_ack"))),
            }
        }
        Some(_) => return Err(f.mistyped("ack", "an object or null")),
    };
    // `release_lease: false` (a gate that denied the tail of its batch)
    // needs nothing of its own: an ack commits its message and the ones
    // before it, and the lease holds the tail until it expires, when it is
    // delivered again in order. `true` acks the whole batch anyway.
    let placed = node.group_of_derived(&query_id);
    if pushes.iter().any(|p| !std::ptr::eq(node.group_of(&p.queue), placed)) {
        return Err(spans_groups("a pushed queue is"));
    }
    let source_queue = parse_partition_uuid(&partition_text).and_then(|(q, _)| {
        let store = placed.view.local();
        store.queue_name(q).map(str::to_string)
    });
    let count = body.get("ack").and_then(|a| a.get("count")).and_then(Value::as_u64).unwrap_or(0);
    let pushed: Vec<(String, String)> = pushes
        .iter()
        .map(|p| (p.queue.clone(), p.transaction_id().expect("an HTTP push item is one message").to_string()))
        .collect();
    let mut ack = ack;
    if let Some(item) = ack.as_mut() {
        super::ack_places::resolve(&node, std::slice::from_mut(item));
    }
    let cycle =
        Cycle { query_id: query_id.clone(), partition: canonical_partition(&partition_text), state, pushes, ack };
    let base = |success: bool| {
        json!({
            "success": success, "query_id": query_id, "partition_id": partition_text, "queueName": source_queue,
        })
    };
    match placed.replicator.ask(Typed::streams(StreamsOp::Cycle(cycle))).await? {
        StreamsAnswer::CycleCommitted { pushes, ack, state_ops } => {
            let push_results: Vec<Value> = pushes
                .iter()
                .zip(&pushed)
                .enumerate()
                .map(|(index, (o, (queue, txid)))| {
                    json!({
                        "index": index, "queueName": queue, "transactionId": txid,
                        "messageId": message_uuid(o.partition_id, o.offset),
                        "partitionId": partition_uuid(o.queue_id, o.partition_id), "offset": o.offset,
                    })
                })
                .collect();
            let mut answer = base(true);
            answer["state_ops_applied"] = json!(state_ops);
            answer["push_results"] = json!(push_results);
            answer["ack_result"] = match ack {
                Some(o) => json!({"count": count, "lease_released": o.lease_released, "dlq": o.dead_lettered}),
                None => Value::Null,
            };
            Ok(Json(answer))
        }
        StreamsAnswer::UnknownQuery => Err(unknown_query(&query_id)),
        StreamsAnswer::CycleRolledBack(refusal) => {
            let (error, code) = refusal_text(&refusal, &pushed);
            let mut answer = base(false);
            answer["error"] = json!(error);
            answer["code"] = json!(code);
            Ok(Json(answer))
        }
        other => unreachable!("invariant broken: a streams cycle answered {other:?}"),
    }
}

fn rolled_back(query_id: &str, partition: &str, why: &str, code: &str) -> Value {
    json!({
        "success": false, "query_id": query_id, "partition_id": partition, "code": code,
        "error": format!("the cycle's ack was refused ({why}); the cycle rolled back"),
    })
}

/// Why a cycle was refused whole, and its stable code.
fn refusal_text(refusal: &Refusal, pushed: &[(String, String)]) -> (String, &'static str) {
    match refusal {
        Refusal::LeaseGone { lease } => {
            (format!("lease {lease} expired or is not held; the cycle rolled back"), "lease_expired")
        }
        Refusal::RejectedAck { why, .. } => {
            let why = if [REFUSED_UNKNOWN_MESSAGE, REFUSED_UNRESOLVABLE].contains(&why.0) {
                "is not a stored message"
            } else {
                "is not leased by this cycle or is already acknowledged"
            };
            (format!("the acked message {why}; the cycle rolled back"), "rejected_ack")
        }
        Refusal::KvPrecondition { .. } => (
            "a state row this flush deletes is gone (the flush already committed); the cycle rolled back".into(),
            "state_conflict",
        ),
        Refusal::Duplicate { item, offset } => (
            format!(
                "a sink message to {} ({}) is a duplicate (original offset {offset}); the cycle rolled back",
                pushed[*item].0, pushed[*item].1
            ),
            "duplicate",
        ),
        Refusal::QueueFull(full) => {
            (format!("{}; the cycle rolled back", push::queue_full_message(full)), "queue_full")
        }
    }
}
