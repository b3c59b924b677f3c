//! Browsing and retrying messages (`/api/v1/messages...`): list a queue's
//! messages with where each consumer group stands on them, look one up by
//! partition id and transactionId, and send a dead-lettered one back to be
//! delivered again. Messages are immutable entries of the log: retention
//! removes them, a request does not (`DELETE` is refused).

use super::body::{page, required_query};
use super::error::ApiError;
use super::ids::{iso_time, message_uuid, parse_partition_uuid, partition_uuid, value_json};
use crate::message::{transaction_hash, Message};
use crate::node::{GroupCore, Node};
use crate::planner::command::{Command, QUEUE_MODE};
use crate::planner::cursor;
use crate::qlog::kafka_batch::placed_offset;
use crate::reader::{self, StoredMessage};
use crate::replicate::typed::Typed;
use crate::store::Store;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// How far behind its group's cursor a dead letter may be sent back: the
/// cursor remembers every offset in between as done.
const MAX_RETRY_SPAN: u64 = 1_000_000;

fn not_found(what: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "message_not_found", what)
}

/// Where a group stands on one message.
struct Standing {
    status: &'static str,
    failures: u32,
    /// When the live lease that holds the message runs out.
    lease_expires_us: Option<i64>,
}

fn status_of(store: &Store, (q, p, offset): (u64, u64, u64), group: &str, now_us: i64) -> Standing {
    let key = (q, p, group.to_string());
    let standing = |status, failures| Standing { status, failures, lease_expires_us: None };
    if let Some(dead) = store.dlq.get(&(q, p, group.to_string(), offset)) {
        return standing("dead_letter", dead.failures);
    }
    let Some(c) = store.cursors.get(&key) else { return standing("pending", 0) };
    let failures = c.failures.get(&offset).copied().unwrap_or(0);
    if cursor::is_done(c, offset) {
        return standing("completed", failures);
    }
    match c.lease.as_ref().filter(|l| l.expires_us > now_us && l.first <= offset && offset <= l.last) {
        Some(l) => Standing { status: "processing", failures, lease_expires_us: Some(l.expires_us) },
        None => standing("pending", failures),
    }
}

fn message_json(store: &Store, q: u64, p: u64, m: &StoredMessage, groups: &[String], now_us: i64) -> Value {
    let partition = store.partition(q, p).map(|r| r.name.clone()).unwrap_or_default();
    let states: Vec<Value> = groups
        .iter()
        .map(|g| {
            let s = status_of(store, (q, p, m.offset), g, now_us);
            json!({
                "consumerGroup": g,
                "status": s.status,
                "retryCount": s.failures,
                // Done for the group: its cursor is past the message (acknowledged, dead-lettered or autoAck).
                "consumed": matches!(s.status, "completed" | "dead_letter"),
                "leaseExpiresAt": s.lease_expires_us.map(iso_time),
            })
        })
        .collect();
    json!({
        "id": message_uuid(p, m.offset), "transactionId": m.message.transaction_id, "traceId": m.message.trace_id,
        "producerSub": m.message.producer_sub,
        "data": value_json(&m.message), "createdAt": iso_time(m.timestamp_us),
        "queue": store.queue_name(q), "partition": partition, "partitionId": partition_uuid(q, p), "offset": m.offset,
        "consumerGroups": states,
    })
}

/// The groups with a cursor on a partition, queue mode first.
fn groups_of(store: &Store, q: u64, p: u64) -> Vec<String> {
    let mut groups: Vec<String> = store
        .cursors
        .range((q, p, String::new())..)
        .take_while(|((a, b, _), _)| (*a, *b) == (q, p))
        .map(|(k, _)| k.2.clone())
        .collect();
    groups.sort_by_key(|g| (g != QUEUE_MODE, g.clone()));
    if !groups.iter().any(|g| g == QUEUE_MODE) {
        groups.insert(0, QUEUE_MODE.to_string());
    }
    groups
}

/// (queue, partition) a partition id names.
fn partition_of(partition_id: &str) -> Result<(u64, u64), ApiError> {
    parse_partition_uuid(partition_id)
        .ok_or_else(|| ApiError::bad_request("invalid_partition_id", format!("{partition_id:?} is not a partition id")))
}

/// (queue, partition, offset) of a message named by partition id and
/// transactionId, in `group`, the one its partition id names.
fn locate(group: &GroupCore, partition_id: &str, transaction_id: &str) -> Result<(u64, u64, u64), ApiError> {
    let (q, p) = partition_of(partition_id)?;
    let store = group.view.local();
    // By its dedup row, within its window; or by place (`kafka-place:N`).
    let offset = store
        .dedup
        .get(q, p, &transaction_hash(transaction_id))
        .or_else(|| placed_offset(transaction_id))
        .ok_or_else(|| not_found(format!("no message {transaction_id:?} in partition {partition_id}")))?;
    Ok((q, p, offset))
}

pub async fn get(
    State(node): State<Arc<Node>>,
    Path((partition_id, transaction_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    // Behind the gate, as every read below: a client acts on a message's
    // state (and retries a dead letter it was shown).
    let group = node.group_of_id(partition_of(&partition_id)?.0);
    group.view.gate().await?;
    let (q, p, offset) = locate(group, &partition_id, &transaction_id)?;
    let read = node.clone();
    let stored = tokio::task::spawn_blocking(move || read.group_of_id(q).reader.read_offsets(q, p, &[offset]))
        .await
        .map_err(ApiError::storage)?
        .map_err(ApiError::storage)?;
    let m = stored
        .into_iter()
        .next()
        .ok_or_else(|| not_found(format!("message {transaction_id:?} is no longer stored")))?;
    let store = group.view.local();
    let now = chrono::Utc::now().timestamp_micros();
    Ok(Json(message_json(&store, q, p, &m, &groups_of(&store, q, p), now)))
}

pub async fn list(
    State(node): State<Arc<Node>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let queue = required_query(&q, "queue")?.to_string();
    let (limit, skip) = page(&q)?;
    let group = q.get("consumerGroup").filter(|g| !g.is_empty()).cloned().unwrap_or_else(|| QUEUE_MODE.to_string());
    let wanted_status = q.get("status").filter(|s| !s.is_empty()).cloned();
    let group_core = node.group_of(&queue);
    group_core.view.gate().await?;
    let partitions: Vec<(u64, u64, u64, u64)> = {
        let store = group_core.view.local();
        let Some(qid) = store.queue_id(&queue) else {
            return Ok(Json(json!({"messages": [], "limit": limit, "offset": skip})));
        };
        store
            .partitions
            .range((qid, 0)..=(qid, u64::MAX))
            .filter(|(_, r)| q.get("partition").is_none_or(|want| *want == r.name))
            .map(|((a, b), r)| (*a, *b, r.log_start, r.next_offset))
            .collect()
    };
    let read = node.clone();
    let found = tokio::task::spawn_blocking(move || {
        let group_core = read.group_of(&queue);
        let mut out = Vec::new();
        let mut skipped = 0usize;
        let now = chrono::Utc::now().timestamp_micros();
        'partitions: for (qid, p, start, end) in partitions {
            let mut at = start;
            while at < end {
                let (batch, _) = group_core.reader.read_from::<Message>(qid, p, at, end, 1 << 20)?;
                let Some(last) = batch.last().map(|m| m.offset) else { break };
                let store = group_core.view.local();
                for m in &batch {
                    let status = status_of(&store, (qid, p, m.offset), &group, now).status;
                    if wanted_status.as_ref().is_some_and(|w| w != status) {
                        continue;
                    }
                    if skipped < skip {
                        skipped += 1;
                        continue;
                    }
                    out.push(message_json(&store, qid, p, m, std::slice::from_ref(&group), now));
                    if out.len() == limit {
                        break 'partitions;
                    }
                }
                at = last + 1;
            }
        }
        Ok::<_, reader::ReaderError>(out)
    })
    .await
    .map_err(ApiError::storage)?
    .map_err(ApiError::storage)?;
    Ok(Json(json!({"messages": found, "limit": limit, "offset": skip})))
}

pub async fn retry(
    State(node): State<Arc<Node>>,
    Path((partition_id, transaction_id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let placed = node.group_of_id(partition_of(&partition_id)?.0);
    placed.view.gate().await?;
    let (qid, p, offset) = locate(placed, &partition_id, &transaction_id)?;
    let group = q.get("consumerGroup").filter(|g| !g.is_empty()).cloned();
    {
        let store = placed.view.local();
        for ((_, _, g, o), _) in
            store.dlq.range((qid, p, String::new(), 0)..).take_while(|((a, b, _, _), _)| (*a, *b) == (qid, p))
        {
            let committed = store.cursors.get(&(qid, p, g.clone())).map_or(0, |c| c.committed);
            if *o == offset && committed.saturating_sub(offset) > MAX_RETRY_SPAN {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "retry_too_far",
                    format!("group {g:?} is more than {MAX_RETRY_SPAN} messages past this one: seek the group instead"),
                ));
            }
        }
    }
    let command = Command::Redeliver { queue: qid, partition: p, offset, group: group.clone() };
    let groups = placed.replicator.ask(Typed::group(command)).await?;
    if groups == 0 {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_dead_lettered",
            format!(
                "message {transaction_id:?} is not in the dead-letter queue{}",
                group.map(|g| format!(" of group {g:?}")).unwrap_or_default()
            ),
        ));
    }
    Ok(Json(json!({"success": true, "transactionId": transaction_id, "partitionId": partition_id, "retried": groups})))
}

pub async fn delete(Path((_partition_id, _transaction_id)): Path<(String, String)>) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "message_delete_unsupported",
        "messages are immutable entries of the log: acknowledge it for your group, or let retention remove it",
    )
}
