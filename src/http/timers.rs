//! Timers: `POST /api/v1/timers` with `{"operations": [...]}` (schedule,
//! reschedule, cancel), `DELETE /api/v1/timers/{queue}/{*timerKey}` to
//! cancel, `GET` the same path to peek, `GET /api/v1/timers/{queue}` to list.
//! Statuses are the client's closed set: scheduled, rescheduled, cancelled,
//! absent (too_late never happens here: a fire and a cancel are decided in
//! order by the planner).

use super::body::operations;
use super::error::ApiError;
use super::ids::iso_time;
use super::names;
use super::push::DEFAULT_PARTITION;
use crate::message::Message;
use crate::node::Node;
use crate::planner::timers::{timer_key, TimerOp, TimerResult, TimerVerb};
use crate::replicate::typed::Typed;
use crate::store::rows::TimerRow;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub const MAX_OPS: usize = 256;
pub const MAX_PAYLOAD_BYTES: usize = 1024 * 1024;
/// The furthest ahead a timer may be set: 90 days.
pub const MAX_DELAY_MS: i64 = 90 * 24 * 3600 * 1000;
/// Fields the broker owns; a caller may not set them.
const SERVER_OWNED: [&str; 14] = [
    "producerSub",
    "producer_sub",
    "messageId",
    "message_id",
    "tenant",
    "tenantId",
    "tenant_id",
    "deliverAt",
    "deliver_at",
    "delaySeconds",
    "delay_seconds",
    "attempts",
    "claimToken",
    "claimedUntil",
];

fn bad(reason: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request("timers_bad_request", message).with_reason(reason)
}

fn name(op: &Map<String, Value>, field: &str, reason: &'static str) -> Result<String, ApiError> {
    op.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| bad(reason, format!("{field} is a non-empty string")))
}

pub fn parse_op(v: &Value) -> Result<TimerOp, ApiError> {
    let op = v.as_object().ok_or_else(|| bad("timers_bad_body", "each operation is an object"))?;
    if let Some(k) = op.keys().find(|k| k.starts_with('_') || SERVER_OWNED.contains(&k.as_str())) {
        return Err(bad("timers_server_owned_field", format!("{k} is set by the broker, not the caller")));
    }
    let verb = match op.get("op").and_then(Value::as_str) {
        Some("schedule") => TimerVerb::Schedule,
        Some("reschedule") => TimerVerb::Reschedule,
        Some("cancel") => TimerVerb::Cancel,
        other => return Err(bad("timers_bad_op", format!("op must be schedule, reschedule or cancel, not {other:?}"))),
    };
    let queue = name(op, "queue", "timers_queue_required")?;
    let key = name(op, "timerKey", "timers_bad_op")?;
    let partition = match op.get("partition") {
        None | Some(Value::Null) => DEFAULT_PARTITION.to_string(),
        Some(_) => name(op, "partition", "timers_bad_op")?,
    };
    for (field, value) in [("queue", &queue), ("partition", &partition)] {
        if !names::is_valid(value) {
            return Err(bad("timers_bad_op", format!("{field} is {}", names::RULE)));
        }
    }
    let txn = op.get("txn").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_string);
    if verb == TimerVerb::Cancel {
        return Ok(TimerOp { verb, queue, key, partition, delay_ms: 0, txn, payload: vec![], sealed: false });
    }
    let delay_ms =
        op.get("delayMs").and_then(Value::as_f64).ok_or_else(|| bad("timers_delay_required", "delayMs is a number"))?
            as i64;
    if delay_ms > MAX_DELAY_MS {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "timer_horizon_exceeded",
            "delayMs is beyond the 90-day horizon",
        ));
    }
    let encoded = op
        .get("payload")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("timers_payload_required", "payload is a base64 string"))?;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| bad("timers_payload_not_base64", "payload is not standard base64"))?;
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "a timer's payload is at most 1 MiB",
        ));
    }
    if op.get("payloadZstd") == Some(&Value::Bool(true)) || op.get("encrypted") == Some(&Value::Bool(true)) {
        return Err(bad("timers_bad_op", "pre-compressed or encrypted timer payloads are not supported by this build"));
    }
    Ok(TimerOp {
        verb,
        queue,
        key,
        partition,
        delay_ms,
        txn: Some(txn.unwrap_or_else(|| uuid::Uuid::new_v4().to_string())),
        payload,
        sealed: false,
    })
}

/// Seals the payloads of schedules aimed at encrypted queues, so a waiting
/// timer keeps no plaintext either; the fired message carries the sealed
/// payload as it is (its transactionId is the one it was sealed with).
pub fn seal_ops(node: &Node, ops: &mut [TimerOp]) -> Result<(), ApiError> {
    let mut sealer = node.sealer();
    for op in ops.iter_mut().filter(|op| matches!(op.verb, TimerVerb::Schedule | TimerVerb::Reschedule)) {
        let txn = op.txn.clone().expect("a parsed schedule names its transactionId");
        let mut message = Message::new(txn, std::mem::take(&mut op.payload));
        sealer.seal(&op.queue, &mut message)?;
        op.payload = message.value.unwrap_or_default();
        op.sealed = message.encrypted;
    }
    Ok(())
}

/// A waiting timer's payload as the client reads it: opened if sealed.
fn payload_of(node: &Node, row: &TimerRow) -> Vec<u8> {
    if !row.sealed {
        return row.payload.clone();
    }
    let mut message = Message { encrypted: true, ..Message::new(row.txn.clone(), row.payload.clone()) };
    match node.cipher.as_ref().map(|c| c.open(&mut message)) {
        Some(Ok(())) => message.value.unwrap_or_default(),
        _ => vec![],
    }
}

pub fn result_json(op: &TimerOp, r: &TimerResult) -> Value {
    let mut v = match r {
        TimerResult::Scheduled { rescheduled, txn, message_id, deliver_at_us } => json!({
            "ok": true,
            "status": if *rescheduled { "rescheduled" } else { "scheduled" },
            "txn": txn, "messageId": message_id, "deliverAt": iso_time(*deliver_at_us),
        }),
        TimerResult::Cancelled { txn } => json!({"ok": true, "status": "cancelled", "txn": txn}),
        TimerResult::Absent => json!({"ok": false, "status": "absent", "txn": op.txn}),
    };
    v["queue"] = json!(op.queue);
    v["timerKey"] = json!(op.key);
    v
}

async fn run(node: &Node, ops: Vec<TimerOp>) -> Result<Vec<Value>, ApiError> {
    let mut seen = HashSet::new();
    if let Some(op) = ops.iter().find(|op| !seen.insert((op.queue.clone(), op.key.clone()))) {
        return Err(bad("timers_bad_op", format!("timer {}/{} appears twice in one call", op.queue, op.key)));
    }
    // A timer lives with its queue, so its fire is one entry there.
    let results = node
        .ask_split(
            ops.clone(),
            |node, op| node.group_of(&op.queue),
            |group, ops| async move { group.replicator.ask(Typed::timers(ops)).await },
        )
        .await?;
    Ok(ops.iter().zip(&results).map(|(op, r)| result_json(op, r)).collect())
}

pub async fn batch(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let ops = operations(body, MAX_OPS, |reason, message| match reason {
        "too_many_ops" => bad("timers_too_many_ops", message),
        _ => bad("timers_bad_body", message),
    })?;
    let mut ops = ops.iter().map(parse_op).collect::<Result<Vec<_>, _>>()?;
    seal_ops(&node, &mut ops)?;
    if ops.is_empty() {
        return Ok(Json(json!({"results": []})));
    }
    Ok(Json(json!({"results": run(&node, ops).await?})))
}

pub async fn cancel(
    State(node): State<Arc<Node>>,
    Path((queue, key)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let op = TimerOp {
        verb: TimerVerb::Cancel,
        queue,
        key,
        partition: DEFAULT_PARTITION.into(),
        delay_ms: 0,
        txn: q.get("txn").cloned(),
        payload: vec![],
        sealed: false,
    };
    let mut results = run(&node, vec![op]).await?;
    Ok(Json(results.pop().unwrap_or(Value::Null)))
}

fn row_json(node: &Node, queue: &str, key: &str, row: &TimerRow) -> Value {
    json!({
        "queue": queue, "timerKey": key, "partition": row.partition, "deliverAt": iso_time(row.deliver_at_us),
        "txn": row.txn, "messageId": row.message_id, "payload": base64::engine::general_purpose::STANDARD.encode(payload_of(node, row)),
        "payloadZstd": false, "encrypted": false, "attempts": 0, "lastError": null, "claimed": false,
        "createdAt": iso_time(row.created_us), "updatedAt": iso_time(row.updated_us),
    })
}

pub async fn peek(
    State(node): State<Arc<Node>>,
    Path((queue, key)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    // Behind the gate: a client acts on whether its timer is still pending.
    let group = node.group_of(&queue);
    group.view.gate().await?;
    let store = group.view.local();
    Ok(Json(match store.timer(&timer_key(&queue, &key)) {
        Some(row) => {
            let mut v = row_json(&node, &queue, &key, row);
            v["found"] = json!(true);
            v
        }
        None => json!({"found": false, "queue": queue, "timerKey": key}),
    }))
}

pub async fn list(
    State(node): State<Arc<Node>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(100).clamp(1, 1000);
    let group = node.group_of(&queue);
    group.view.gate().await?;
    let prefix = timer_key(&queue, "");
    let after = q.get("after").map(|a| timer_key(&queue, a));
    let store = group.view.local();
    let mut rows: Vec<Value> = store
        .timers_from(&prefix, after.as_deref())
        .take(limit + 1)
        .map(|(k, row)| row_json(&node, &queue, &k[prefix.len()..], row))
        .collect();
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let next_after = if truncated { rows.last().map(|r| r["timerKey"].clone()) } else { None };
    Ok(Json(json!({"rows": rows, "truncated": truncated, "nextAfter": next_after})))
}
