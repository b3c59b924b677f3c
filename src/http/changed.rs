//! `POST /api/v1/partitions/changed`: the partitions of a queue written at or
//! after a time, in creation order, a page at a time, with the `safeTime` up
//! to which every write is counted (pass it as the next `since`).

use super::body::{json_object, objects};
use super::error::ApiError;
use super::fetch::UNKNOWN_TOPIC_OR_PARTITION;
use super::ids::{iso_time, partition_uuid};
use crate::node::Node;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// Partitions per page: the default and the ceiling.
pub const PAGE: usize = 1000;

pub async fn changed(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let entries = super::body::Fields::new(&body, "").array("entries")?;
    let asks = objects(entries, "entries")?;
    // Every batch not applied yet is later than the last one applied, in
    // each group asked.
    let mut safe_us = i64::MAX;
    let mut out = Vec::with_capacity(asks.len());
    for ask in &asks {
        let queue = ask.name_str("queue")?;
        let since_us = match ask.opt_str("since")? {
            None => i64::MIN,
            Some(t) => chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|_| ask.mistyped("since", "an ISO-8601 time"))?
                .timestamp_micros(),
        };
        let after: u64 = match ask.opt_str("after")? {
            None => 0,
            Some(a) => a.parse().map_err(|_| ask.mistyped("after", "the next cursor of an earlier page"))?,
        };
        let limit = ask.opt_u64("limit")?.unwrap_or(PAGE as u64).clamp(1, PAGE as u64) as usize;
        let store = node.group_of(queue).view.local();
        safe_us = safe_us.min(store.applied_us + 1);
        let Some(q) = store.queue_id(queue) else {
            out.push(json!({"queue": queue, "error": UNKNOWN_TOPIC_OR_PARTITION, "partitions": []}));
            continue;
        };
        let mut rows =
            store.partitions.range((q, after + 1)..=(q, u64::MAX)).filter(|(_, r)| r.last_write_us >= since_us);
        let page: Vec<_> = rows.by_ref().take(limit).collect();
        let more = rows.next().is_some();
        let partitions: Vec<Value> = page
            .iter()
            .map(|((q, p), r)| {
                json!({
                    "name": r.name,
                    "id": partition_uuid(*q, *p),
                    "lastOffset": r.next_offset as i64 - 1,
                    "logStart": r.log_start,
                    "lastWriteAt": iso_time(r.last_write_us),
                })
            })
            .collect();
        let next = more.then(|| page.last().map(|((_, p), _)| p.to_string())).flatten();
        out.push(json!({"queue": queue, "partitions": partitions, "next": next}));
    }
    if safe_us == i64::MAX {
        safe_us = node.queue_groups().iter().map(|g| g.view.local().applied_us + 1).min().unwrap_or(0);
    }
    Ok(Json(json!({"entries": out, "safeTime": iso_time(safe_us)})))
}
