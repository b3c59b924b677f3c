//! `POST /api/v1/locks` with `{"operations": [...]}`: acquire, renew,
//! release, get. Verdicts (held, contended, lost) are 200 fields; only a
//! malformed call is an error, `locks_bad_request` with a `reason`.

use super::body::operations;
use super::error::ApiError;
use super::ids::iso_time;
use super::names;
use crate::node::Node;
use crate::planner::locks::{Holder, LockOp, LockResult, LOCKS_NS, MAX_LIMIT};
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

pub const MAX_OPS: usize = 64;

fn bad(reason: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request("locks_bad_request", message).with_reason(reason)
}

fn text(
    op: &Map<String, Value>,
    field: &str,
    reason: &'static str,
    required: bool,
) -> Result<Option<String>, ApiError> {
    match op.get(field) {
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(s))
            if !s.is_empty() && s.len() <= names::MAX_NAME_BYTES && !s.chars().any(char::is_control) =>
        {
            Ok(Some(s.clone()))
        }
        _ => Err(bad(
            reason,
            format!(
                "{field} is a non-empty string of at most {} bytes with no control characters",
                names::MAX_NAME_BYTES
            ),
        )),
    }
}

fn positive(
    op: &Map<String, Value>,
    field: &str,
    missing: &'static str,
    invalid: &'static str,
) -> Result<u64, ApiError> {
    match op.get(field) {
        None | Some(Value::Null) => Err(bad(missing, format!("{field} is required"))),
        Some(v) => {
            v.as_u64().filter(|n| *n > 0).ok_or_else(|| bad(invalid, format!("{field} is an integer above zero")))
        }
    }
}

fn parse_op(v: &Value) -> Result<LockOp, ApiError> {
    let op = v.as_object().ok_or_else(|| bad("locks_bad_request", "each operation is an object"))?;
    let name = text(op, "name", "locks_bad_name", true)?.expect("required");
    if name.contains('#') {
        return Err(bad("locks_bad_name", "a lock name holds no #"));
    }
    let ttl = |op: &Map<String, Value>| {
        if op.contains_key("forever") {
            return Err(bad("locks_ttl_required", "a lock has a ttlSeconds, never forever"));
        }
        positive(op, "ttlSeconds", "locks_ttl_required", "locks_bad_ttl")
    };
    let slot = match op.get("slot") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .filter(|s| *s < MAX_LIMIT as u64)
            .ok_or_else(|| bad("locks_bad_slot", "slot is an integer below 1024"))? as u32,
    };
    Ok(match op.get("op").and_then(Value::as_str) {
        Some("acquire") => {
            let limit = match op.get("limit") {
                None | Some(Value::Null) => 1,
                Some(v) => v
                    .as_u64()
                    .filter(|l| (1..=MAX_LIMIT as u64).contains(l))
                    .ok_or_else(|| bad("locks_bad_limit", "limit is 1 to 1024"))? as u32,
            };
            LockOp::Acquire { name, ttl_s: ttl(op)?, owner: text(op, "owner", "locks_bad_owner", false)?, limit }
        }
        Some("renew") => LockOp::Renew {
            name,
            token: positive(op, "token", "locks_token_required", "locks_bad_token")?,
            ttl_s: ttl(op)?,
            slot,
            owner: text(op, "owner", "locks_bad_owner", false)?,
        },
        Some("release") => {
            LockOp::Release { name, token: positive(op, "token", "locks_token_required", "locks_bad_token")?, slot }
        }
        Some("get") => LockOp::Get { name },
        other => {
            return Err(bad("locks_unknown_op", format!("op must be acquire, renew, release or get, not {other:?}")))
        }
    })
}

fn name_of(op: &LockOp) -> &str {
    match op {
        LockOp::Acquire { name, .. }
        | LockOp::Renew { name, .. }
        | LockOp::Release { name, .. }
        | LockOp::Get { name } => name,
    }
}

fn guard(name: &str, slot: u32, token: u64) -> Value {
    json!({"op": "check", "ns": LOCKS_NS, "key": format!("{name}#{slot}"), "expect": token, "required": true})
}

fn holders_json(holders: &[Holder], detail: bool) -> Value {
    Value::Array(
        holders
            .iter()
            .map(|h| {
                let mut v = json!({"slot": h.slot, "owner": h.owner});
                if detail {
                    let since = serde_json::from_str::<Value>(&h.row.value).ok().and_then(|v| v.get("since").cloned());
                    v["token"] = json!(h.row.version);
                    v["since"] = since.filter(Value::is_string).unwrap_or_else(|| json!(iso_time(h.row.updated_us)));
                    v["expiresAt"] = json!(h.row.expires_us.map(iso_time));
                    v["renewedAt"] = json!(iso_time(h.row.updated_us));
                }
                v
            })
            .collect(),
    )
}

fn result_json(index: usize, op: &LockOp, r: &LockResult) -> Value {
    let name = name_of(op);
    let mut v = match r {
        LockResult::Granted { slot, token, owner, already } => {
            let mut v = json!({"acquired": true, "slot": slot, "token": token, "owner": owner, "guard": guard(name, *slot, *token)});
            if *already {
                v["already"] = json!(true);
            }
            v
        }
        LockResult::Held { holders } => {
            json!({"acquired": false, "reason": "held", "holders": holders_json(holders, false)})
        }
        LockResult::Renewed { slot, token } => {
            json!({"renewed": true, "slot": slot, "token": token, "guard": guard(name, *slot, *token)})
        }
        LockResult::Released { slot } => json!({"released": true, "slot": slot}),
        LockResult::Lost { slot, holders } => {
            let verb = if matches!(op, LockOp::Release { .. }) { "released" } else { "renewed" };
            json!({verb: false, "reason": "lost", "slot": slot, "holders": holders_json(holders, false)})
        }
        LockResult::Status { holders } => json!({"held": !holders.is_empty(), "holders": holders_json(holders, true)}),
    };
    v["index"] = json!(index);
    v["op"] = json!(match op {
        LockOp::Acquire { .. } => "acquire",
        LockOp::Renew { .. } => "renew",
        LockOp::Release { .. } => "release",
        LockOp::Get { .. } => "get",
    });
    v["name"] = json!(name);
    v
}

pub async fn batch(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let ops = operations(body, MAX_OPS, |reason, message| match reason {
        "too_many_ops" => bad("locks_too_many_ops", message),
        _ => bad("locks_bad_body", message),
    })?;
    let ops = ops.iter().map(parse_op).collect::<Result<Vec<_>, _>>()?;
    let writes = ops.iter().any(|op| matches!(op, LockOp::Acquire { .. } | LockOp::Renew { .. }));
    if writes && node.disk_gate.is_full() {
        return Err(ApiError::storage_full());
    }
    let mut seen = HashSet::new();
    if let Some(op) = ops.iter().find(|op| !seen.insert(name_of(op).to_string())) {
        return Err(bad("locks_duplicate_in_call", format!("lock {} is named twice in one call", name_of(op))));
    }
    if ops.is_empty() {
        return Ok(Json(json!({"results": []})));
    }
    let results = node.group0().replicator.ask(Typed::locks(ops.clone())).await?;
    Ok(Json(
        json!({"results": ops.iter().zip(&results).enumerate().map(|(i, (op, r))| result_json(i, op, r)).collect::<Vec<_>>()}),
    ))
}
