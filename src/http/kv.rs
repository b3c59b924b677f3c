//! The KV store over HTTP: `POST /api/v1/kv` with `{"operations": [...]}`
//! (what the queen-mq client sends for every call), and the single-key path
//! routes `GET`, `PUT`, `DELETE /api/v1/kv/{ns}/{*key}`. Verdicts (absent,
//! lost races, a lost required precondition) are 200s; only a malformed call
//! is an error, `kv_bad_request` with a `reason`.

use super::body::{operations, optional_object};
use super::error::ApiError;
use super::ids::{iso_time, payload_json};
use crate::node::Node;
use crate::planner::kv::{Expiry, KvAnswer, KvKind, KvOp, KvResult};
use crate::replicate::typed::Typed;
use crate::store::rows::KvRow;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

pub const MAX_OPS: usize = 256;
pub const MAX_KEY_BYTES: usize = 512;
pub const MAX_VALUE_BYTES: usize = 65_536;

fn bad(reason: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request("kv_bad_request", message).with_reason(reason)
}

fn too_large(reason: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message).with_reason(reason)
}

fn namespace(v: Option<&Value>) -> Result<String, ApiError> {
    let ns = v.and_then(Value::as_str).ok_or_else(|| bad("kv_bad_namespace", "ns is required and is a string"))?;
    let ok = ns.len() <= 64
        && ns
            .bytes()
            .enumerate()
            .all(|(i, b)| b.is_ascii_lowercase() || b.is_ascii_digit() || (i > 0 && b"._-".contains(&b)));
    if ns.is_empty() || !ok {
        return Err(bad("kv_bad_namespace", format!("namespace {ns:?} must match [a-z0-9][a-z0-9._-]{{0,63}}")));
    }
    if crate::internal_kv::ALL.contains(&ns) {
        return Err(bad("kv_reserved_namespace", format!("namespace {ns:?} holds the broker's own rows")));
    }
    Ok(ns.to_string())
}

fn key_of(v: Option<&Value>, field: &str) -> Result<String, ApiError> {
    let key =
        v.and_then(Value::as_str).ok_or_else(|| bad("kv_bad_key", format!("{field} is required and is a string")))?;
    if key.is_empty() || key.contains('\0') {
        return Err(bad("kv_bad_key", format!("{field} must be non-empty and hold no NUL")));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(too_large("kv_key_too_large", format!("{field} is over {MAX_KEY_BYTES} bytes")));
    }
    Ok(key.to_string())
}

fn expiry(op: &Map<String, Value>) -> Result<Expiry, ApiError> {
    match (op.get("ttlSeconds"), op.get("forever")) {
        (Some(_), Some(Value::Bool(true))) => Err(bad("kv_bad_ttl", "give ttlSeconds or forever, not both")),
        (Some(t), _) => match t.as_u64() {
            Some(s) if s > 0 => Ok(Expiry::Seconds(s)),
            _ => Err(bad("kv_bad_ttl", "ttlSeconds must be an integer above zero")),
        },
        (None, Some(Value::Bool(true))) => Ok(Expiry::Forever),
        _ => Err(bad("kv_expiry_not_specified", "a write names ttlSeconds or forever: true")),
    }
}

fn expect(op: &Map<String, Value>) -> Result<Option<u64>, ApiError> {
    match op.get("expect") {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| bad("kv_bad_expect", "expect must be an integer >= 0")),
    }
}

fn value(op: &Map<String, Value>) -> Result<String, ApiError> {
    let v = op.get("value").ok_or_else(|| bad("kv_bad_request", "a put carries a value (null is a value)"))?;
    let text = v.to_string();
    if text.len() > MAX_VALUE_BYTES {
        return Err(too_large("kv_value_too_large", format!("the value is over {MAX_VALUE_BYTES} bytes")));
    }
    Ok(text)
}

fn number(op: &Map<String, Value>, field: &str) -> Result<Option<f64>, ApiError> {
    op.get(field)
        .map(|v| v.as_f64().ok_or_else(|| bad("kv_bad_request", format!("{field} must be a number"))))
        .transpose()
}

/// One operation of the wire, checked.
pub fn parse_op(v: &Value) -> Result<KvOp, ApiError> {
    let op = v.as_object().ok_or_else(|| bad("kv_bad_body", "each operation is an object"))?;
    if ["tenant", "tenantId", "_tenant"].iter().any(|t| op.contains_key(*t)) {
        return Err(bad("kv_tenant_not_an_input", "the tenant is not an input"));
    }
    let ns = namespace(op.get("ns").or_else(|| op.get("namespace")))?;
    let required = op.get("required") == Some(&Value::Bool(true));
    let name = op.get("op").and_then(Value::as_str).unwrap_or("");
    let key = || key_of(op.get("key"), "key");
    let kind = match name {
        "get" => KvKind::Get { key: key()? },
        "getMany" => {
            let keys = op.get("keys").and_then(Value::as_array).filter(|k| !k.is_empty());
            let keys = keys.ok_or_else(|| bad("kv_bad_request", "getMany takes a non-empty keys array"))?;
            KvKind::GetMany { keys: keys.iter().map(|k| key_of(Some(k), "keys[]")).collect::<Result<_, _>>()? }
        }
        "getPrefix" => {
            let prefix = op.get("prefix").and_then(Value::as_str).filter(|p| !p.is_empty());
            let prefix = prefix.ok_or_else(|| bad("kv_prefix_required", "getPrefix takes a non-empty prefix"))?;
            KvKind::GetPrefix {
                prefix: prefix.to_string(),
                after: op.get("after").and_then(Value::as_str).map(str::to_string),
                limit: op.get("limit").and_then(Value::as_u64).unwrap_or(100) as usize,
                keys_only: op.get("keysOnly") == Some(&Value::Bool(true)),
            }
        }
        "put" => KvKind::Put { key: key()?, value: value(op)?, expiry: expiry(op)?, expect: expect(op)? },
        "putIfAbsent" => {
            if expect(op)?.is_some_and(|e| e != 0) {
                return Err(bad("kv_bad_expect", "putIfAbsent takes no expect"));
            }
            KvKind::PutIfAbsent { key: key()?, value: value(op)?, expiry: expiry(op)? }
        }
        "delete" => KvKind::Delete { key: key()?, expect: expect(op)? },
        "incr" => {
            if op.contains_key("expect") {
                return Err(bad("kv_bad_request", "incr takes no expect"));
            }
            let delta = match op.get("delta") {
                None => serde_json::Number::from(1),
                Some(Value::Number(n)) => n.clone(),
                Some(_) => return Err(bad("kv_bad_request", "delta must be a number")),
            };
            KvKind::Incr { key: key()?, delta, min: number(op, "min")?, max: number(op, "max")?, expiry: expiry(op)? }
        }
        "check" => {
            let e = expect(op)?.ok_or_else(|| bad("kv_bad_expect", "check takes expect"))?;
            KvKind::Check { key: key()?, expect: e }
        }
        other => return Err(bad("kv_unknown_op", format!("unknown KV op {other:?}"))),
    };
    Ok(KvOp { ns, kind, required })
}

fn written_key(op: &KvOp) -> Option<&str> {
    match &op.kind {
        KvKind::Put { key, .. }
        | KvKind::PutIfAbsent { key, .. }
        | KvKind::Delete { key, .. }
        | KvKind::Incr { key, .. } => Some(key),
        _ => None,
    }
}

fn op_name(op: &KvOp) -> &'static str {
    match op.kind {
        KvKind::Get { .. } => "get",
        KvKind::GetMany { .. } => "getMany",
        KvKind::GetPrefix { .. } => "getPrefix",
        KvKind::Put { .. } => "put",
        KvKind::PutIfAbsent { .. } => "putIfAbsent",
        KvKind::Delete { .. } => "delete",
        KvKind::Incr { .. } => "incr",
        KvKind::Check { .. } => "check",
    }
}

fn row_json(key: &str, row: &KvRow, with_value: bool) -> Value {
    let mut v = json!({
        "key": key,
        "version": row.version,
        "expiresAt": row.expires_us.map(iso_time),
        "updatedAt": iso_time(row.updated_us),
    });
    if with_value {
        v["value"] = payload_json(row.value.as_bytes());
    }
    v
}

pub fn result_json(index: usize, op: &KvOp, r: &KvResult) -> Value {
    let mut v = match r {
        KvResult::Get { key, row: Some(row) } => {
            let mut v = row_json(key, row, true);
            v["found"] = json!(true);
            v
        }
        KvResult::Get { key, row: None } => json!({"found": false, "key": key}),
        KvResult::Many { rows, missing } => {
            json!({"rows": rows.iter().map(|(k, r)| row_json(k, r, true)).collect::<Vec<_>>(), "missing": missing, "truncated": false})
        }
        KvResult::Prefix { rows, truncated, next_after, keys_only } => json!({
            "rows": rows.iter().map(|(k, r)| row_json(k, r, !keys_only)).collect::<Vec<_>>(),
            "truncated": truncated,
            "nextAfter": next_after,
        }),
        KvResult::Write { key, applied, row } => {
            let mut v = json!({
                "applied": applied.is_ok(),
                "key": key,
                "value": row.as_ref().map_or(Value::Null, |r| payload_json(r.value.as_bytes())),
                "version": row.as_ref().map_or(0, |r| r.version),
            });
            if let Err(reason) = applied {
                v["reason"] = json!(reason.as_str());
                if matches!(op.kind, KvKind::Incr { .. }) && row.is_none() {
                    v["value"] = json!(0);
                }
            }
            v
        }
    };
    v["index"] = json!(index);
    v["op"] = json!(op_name(op));
    v
}

async fn run(node: &Node, ops: Vec<KvOp>) -> Result<Result<Vec<Value>, Value>, ApiError> {
    let mut written = HashSet::new();
    for op in &ops {
        if let Some(key) = written_key(op) {
            if !written.insert((op.ns.clone(), key.to_string())) {
                return Err(bad("kv_duplicate_key_in_call", format!("{}/{key} is written twice in one call", op.ns)));
            }
        }
    }
    let answer = node.group0().replicator.ask(Typed::kv(ops.clone())).await?;
    Ok(match answer {
        KvAnswer::Results(results) => Ok(results.iter().enumerate().map(|(i, r)| result_json(i, &ops[i], r)).collect()),
        KvAnswer::Precondition { failed_index, reason, row } => Err(json!({
            "ok": false,
            "reason": "kv_precondition",
            "failedIndex": failed_index,
            "kvReason": reason.as_str(),
            "version": row.as_ref().map_or(0, |r| r.version),
            "value": row.as_ref().map_or(Value::Null, |r| payload_json(r.value.as_bytes())),
        })),
    })
}

pub async fn batch(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let ops = operations(body, MAX_OPS, |reason, message| match reason {
        "too_many_ops" => bad("kv_too_many_ops", message),
        _ => bad("kv_bad_body", message),
    })?;
    let ops = ops.iter().map(parse_op).collect::<Result<Vec<_>, _>>()?;
    if ops.iter().any(|op| written_key(op).is_some()) && node.disk_gate.is_full() {
        return Err(ApiError::storage_full());
    }
    if ops.is_empty() {
        return Ok(Json(json!({"results": []})));
    }
    Ok(Json(match run(&node, ops).await? {
        Ok(results) => json!({"results": results}),
        Err(precondition) => precondition,
    }))
}

fn single(
    parts: (String, String),
    fields: Option<Map<String, Value>>,
    op: &str,
    query: Option<String>,
) -> Result<Value, ApiError> {
    if query.is_some_and(|q| !q.is_empty()) {
        return Err(bad("kv_no_query_string", "the KV path routes take no query string"));
    }
    let mut m = fields.unwrap_or_default();
    if ["op", "ns", "namespace", "key"].iter().any(|k| m.contains_key(*k)) {
        return Err(bad("kv_field_in_path", "namespace and key come from the path"));
    }
    m.insert("op".into(), json!(op));
    m.insert("ns".into(), json!(parts.0));
    m.insert("key".into(), json!(parts.1));
    Ok(Value::Object(m))
}

async fn one(node: &Node, op: Value) -> Result<Json<Value>, ApiError> {
    let op = parse_op(&op)?;
    Ok(Json(match run(node, vec![op]).await? {
        Ok(mut results) => results.pop().unwrap_or(Value::Null),
        Err(precondition) => precondition,
    }))
}

pub async fn get(
    State(node): State<Arc<Node>>,
    Path(parts): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Result<Json<Value>, ApiError> {
    one(&node, single(parts, None, "get", q)?).await
}

pub async fn put(
    State(node): State<Arc<Node>>,
    Path(parts): Path<(String, String)>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let fields = optional_object(&body)?.ok_or_else(|| bad("kv_bad_body", "a put carries a JSON object body"))?;
    one(&node, single(parts, Some(fields), "put", q)?).await
}

pub async fn delete(
    State(node): State<Arc<Node>>,
    Path(parts): Path<(String, String)>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    one(&node, single(parts, optional_object(&body)?, "delete", q)?).await
}
