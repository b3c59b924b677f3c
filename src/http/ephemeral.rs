//! Ephemeral queues over HTTP (`/api/v1/ephemeral/...`): configure, reset,
//! delete, push, pop (long poll), ack, list, depth. A 404 is reserved for a
//! depth of an unknown queue (`ephemeral_queue_not_found`): the client reads
//! any other 404 as "this broker has no ephemeral queues".

use super::body::{json_object, objects, Fields};
use super::error::ApiError;
use crate::ephemeral::{AckOutcome, EphOptions, PushRefused, QUEUE_MODE};
use crate::internal_kv::EPHEMERAL_DECLARATIONS;
use crate::node::Node;
use crate::planner::kv::{Expiry, KvKind, KvOp};
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAX_MESSAGES: usize = 10_000;
const MAX_WAIT: Duration = Duration::from_secs(300);
/// How often a waiting pop looks again without a push: leases run out on their own.
const TICK: Duration = Duration::from_millis(100);

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("ephemeral_bad_request", message)
}

fn queue_name(f: &Fields<'_>) -> Result<String, ApiError> {
    let q = f.name_str("queue")?;
    if q.len() > 512 || q.chars().any(char::is_control) {
        return Err(bad("queue is at most 512 bytes with no control characters"));
    }
    Ok(q.to_string())
}

/// Writes or removes a declaration durably, as a KV row.
async fn persist(node: &Node, queue: &str, options: Option<&Value>) -> Result<(), ApiError> {
    let kind = match options {
        Some(o) => KvKind::Put { key: queue.to_string(), value: o.to_string(), expiry: Expiry::Forever, expect: None },
        None => KvKind::Delete { key: queue.to_string(), expect: None },
    };
    let op = KvOp { ns: EPHEMERAL_DECLARATIONS.to_string(), kind, required: false };
    node.group0().replicator.ask(Typed::kv(vec![op])).await?;
    Ok(())
}

pub async fn configure(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let queue = queue_name(&f)?;
    let given = match body.get("options") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(bad("options is an object")),
    };
    let options = EphOptions::parse(&given).map_err(bad)?;
    persist(&node, &queue, Some(&Value::Object(given))).await?;
    node.ephemeral.declare(&queue, options.clone());
    Ok((StatusCode::CREATED, Json(json!({"queue": queue, "options": options.as_json(), "declared": true}))))
}

pub async fn reset(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let queue = queue_name(&Fields::new(&body, ""))?;
    Ok(Json(json!({"queue": queue, "dropped": node.ephemeral.reset(&queue)})))
}

pub async fn delete(State(node): State<Arc<Node>>, Path(queue): Path<String>) -> Result<Json<Value>, ApiError> {
    let (existed, declared) = node.ephemeral.delete(&queue);
    if declared {
        persist(&node, &queue, None).await?;
    }
    Ok(Json(json!({"queue": queue, "deleted": existed, "declared": declared})))
}

pub async fn push(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let queue = queue_name(&f)?;
    let partition = f.opt_str("partition")?.filter(|p| !p.is_empty());
    let messages = objects(f.array("messages")?, "messages")?;
    if messages.len() > MAX_MESSAGES {
        return Err(bad(format!("a push carries at most {MAX_MESSAGES} messages")));
    }
    let payloads: Vec<Value> = messages.iter().map(|m| m.map.get("payload").cloned().unwrap_or(Value::Null)).collect();
    if payloads.is_empty() {
        return Ok((StatusCode::CREATED, Json(json!({"pushed": 0}))));
    }
    match node.ephemeral.push(&queue, partition, payloads) {
        Ok(n) => Ok((StatusCode::CREATED, Json(json!({"pushed": n})))),
        Err(PushRefused::QueueFull) => {
            Err(ApiError::queue_full(format!("ephemeral queue {queue} is at its maxLength or maxBytes")))
        }
    }
}

pub async fn pop(
    State(node): State<Arc<Node>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let queue = q.get("queue").filter(|s| !s.is_empty()).ok_or_else(|| bad("queue is required"))?.clone();
    let partition = q.get("partition").filter(|p| !p.is_empty()).cloned();
    let batch = q
        .get("batch")
        .map_or(Ok(1), |b| b.parse::<usize>().map_err(|_| bad("batch is an integer")))?
        .clamp(1, MAX_MESSAGES);
    let wait = q.get("wait").is_some_and(|w| w == "true");
    let timeout = Duration::from_millis(q.get("timeout").and_then(|t| t.parse().ok()).unwrap_or(30_000)).min(MAX_WAIT);
    let group = q.get("group").filter(|g| !g.is_empty()).cloned().unwrap_or_else(|| QUEUE_MODE.to_string());
    let auto_ack = q.get("autoAck").is_some_and(|a| a == "true");
    let deadline = Instant::now() + timeout;
    // With a windowBuffer, a waiting pop that finds some messages gives more
    // of them until the window closes before it takes a batch.
    let window = if wait { node.ephemeral.window(&queue) } else { None };
    let mut window_closes: Option<Instant> = None;
    loop {
        let changed = node.ephemeral.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if let Some((span, count)) = window {
            let found = node.ephemeral.waiting(&queue, partition.as_deref(), &group);
            let now = Instant::now();
            if found > 0 && found < count.min(batch) {
                let closes = *window_closes.get_or_insert_with(|| (now + span).min(deadline));
                if now < closes {
                    let _ = tokio::time::timeout(TICK.min(closes - now), changed).await;
                    continue;
                }
            }
        }
        let messages = node.ephemeral.pop(&queue, partition.as_deref(), &group, batch, auto_ack);
        let now = Instant::now();
        if !messages.is_empty() || !wait || now >= deadline {
            return Ok(Json(json!({"queue": queue, "messages": messages})));
        }
        let _ = tokio::time::timeout(TICK.min(deadline - now), changed).await;
    }
}

pub async fn ack(State(node): State<Arc<Node>>, body: Result<Bytes, BytesRejection>) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let queue = queue_name(&f)?;
    let group = f.opt_str("group")?.filter(|g| !g.is_empty()).unwrap_or(QUEUE_MODE).to_string();
    let acks = objects(f.array("acks")?, "acks")?;
    if acks.len() > MAX_MESSAGES {
        return Err(bad(format!("an ack carries at most {MAX_MESSAGES} ids")));
    }
    // Every entry is checked before any is applied.
    let parsed = acks
        .iter()
        .map(|a| {
            Ok((
                a.name_str("id")?,
                !matches!(a.opt_str("status")?, None | Some("completed" | "success" | "acked" | "ok")),
            ))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let mut results = Vec::with_capacity(acks.len());
    for (id, failed) in parsed {
        let outcome = match node.ephemeral.ack(&queue, &group, id, failed) {
            AckOutcome::Acked => "acked",
            AckOutcome::Redelivered => "redelivered",
            AckOutcome::Stale => "stale",
            AckOutcome::Unknown => "unknown",
        };
        results.push(json!({"id": id, "outcome": outcome}));
    }
    Ok(Json(json!({"results": results})))
}

pub async fn list(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(node.ephemeral.list())
}

pub async fn depth(State(node): State<Arc<Node>>, Path(queue): Path<String>) -> Result<Json<Value>, ApiError> {
    node.ephemeral.depth(&queue).map(Json).ok_or_else(|| {
        ApiError::new(StatusCode::NOT_FOUND, "ephemeral_queue_not_found", format!("no ephemeral queue {queue}"))
    })
}
