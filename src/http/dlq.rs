//! `GET /api/v1/dlq?queue=&consumerGroup=&partition=&limit=&offset=`: the
//! dead-lettered messages of a queue, with why they were moved.

use super::body::{page, required_query};
use super::error::ApiError;
use super::ids::{iso_time, message_uuid, partition_uuid, value_json};
use crate::iso_time::parse_iso_time;
use crate::node::Node;
use axum::extract::{Query, State};
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

pub async fn list(
    State(node): State<Arc<Node>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let queue = required_query(&q, "queue")?;
    let (limit, skip) = page(&q)?;
    // `from` and `to` bound when a message was moved to the dead-letter queue.
    let time = |name: &str| {
        q.get(name)
            .filter(|t| !t.is_empty())
            .map(|t| {
                parse_iso_time(t)
                    .ok_or_else(|| ApiError::bad_request("invalid_query", format!("{name} is an ISO-8601 time")))
            })
            .transpose()
    };
    let (from, to) = (time("from")?.unwrap_or(i64::MIN), time("to")?.unwrap_or(i64::MAX));
    let placed = node.group_of(queue);
    let rows: Vec<_> = {
        let store = placed.view.local();
        let Some(queue_id) = store.queue_id(queue) else {
            return Ok(Json(json!({"messages": [], "total": 0, "limit": limit, "offset": skip})));
        };
        let partition = match q.get("partition") {
            Some(name) => match store.partition_id(queue_id, name) {
                Some(p) => Some(p),
                None => return Ok(Json(json!({"messages": [], "total": 0, "limit": limit, "offset": skip}))),
            },
            None => None,
        };
        store
            .dlq
            .iter()
            .filter(|((qid, p, g, _), row)| {
                *qid == queue_id
                    && partition.is_none_or(|want| *p == want)
                    && q.get("consumerGroup").is_none_or(|want| want == g)
                    && from <= row.moved_us
                    && row.moved_us <= to
            })
            .map(|((_, p, g, o), row)| {
                let name = store.partition(queue_id, *p).map(|r| r.name.clone()).unwrap_or_default();
                (queue_id, *p, name, g.clone(), *o, row.clone())
            })
            .collect()
    };
    let total = rows.len();
    let mut messages = Vec::new();
    for (queue_id, p, partition, group, offset, row) in rows.into_iter().skip(skip).take(limit) {
        let stored = placed.reader.read_offsets(queue_id, p, &[offset]).map_err(ApiError::storage)?;
        let Some(m) = stored.into_iter().next() else { continue };
        messages.push(json!({
            "id": message_uuid(p, offset),
            "messageId": message_uuid(p, offset),
            "queueName": queue,
            "partitionName": partition,
            "partitionId": partition_uuid(queue_id, p),
            "transactionId": m.message.transaction_id,
            "traceId": m.message.trace_id,
            "producerSub": m.message.producer_sub,
            "consumerGroup": group,
            "errorMessage": row.error,
            "retryCount": row.failures,
            "offset": offset,
            "data": value_json(&m.message),
            "messageCreatedAt": iso_time(m.timestamp_us),
            "movedToDlqAt": iso_time(row.moved_us),
        }));
    }
    Ok(Json(json!({"messages": messages, "total": total, "limit": limit, "offset": skip})))
}
