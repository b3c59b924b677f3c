//! What the node holds, for operators and dashboards (`/api/v1/resources/...`):
//! an overview, namespaces, tasks, queues (filtered and paged), one queue
//! with its partitions, a queue's depth for a consumer group, and partitions.

use super::body::page;
use super::error::ApiError;
use super::ids::{iso_time, partition_uuid};
use crate::node::Node;
use crate::planner::command::QUEUE_MODE;
use crate::queue_options::QueueOptions;
use crate::store::rows::QueueRow;
use crate::store::Store;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

type Params = Query<HashMap<String, String>>;

/// Messages stored in a queue, over all its partitions.
pub fn stored(store: &Store, queue: u64) -> u64 {
    store.partitions.range((queue, 0)..=(queue, u64::MAX)).map(|(_, p)| p.next_offset - p.log_start).sum()
}

/// What a group has not finished in a partition.
pub fn pending(store: &Store, queue: u64, partition: u64, group: &str) -> u64 {
    let Some(p) = store.partition(queue, partition) else { return 0 };
    match store.cursors.get(&(queue, partition, group.to_string())) {
        Some(c) => p.next_offset.saturating_sub(c.committed).saturating_sub(c.done_above.len() as u64),
        None => p.next_offset - p.log_start,
    }
}

pub fn partitions_json(store: &Store, queue: u64) -> Vec<Value> {
    store
        .partitions
        .range((queue, 0)..=(queue, u64::MAX))
        .map(|((q, p), r)| {
            json!({
                "name": r.name, "id": partition_uuid(*q, *p), "highWatermark": r.next_offset, "logStart": r.log_start,
                "messages": r.next_offset - r.log_start, "createdAt": iso_time(r.created_us), "lastWriteAt": iso_time(r.last_write_us),
            })
        })
        .collect()
}

fn queue_json(store: &Store, name: &str, row: &QueueRow) -> Value {
    json!({
        "name": name, "namespace": row.namespace, "task": row.task, "createdAt": iso_time(row.created_us),
        "partitions": store.partitions.range((row.id, 0)..=(row.id, u64::MAX)).count(),
        "messages": stored(store, row.id), "options": QueueOptions::parse(&row.options).as_json(),
    })
}

pub async fn overview(State(node): State<Arc<Node>>) -> Json<Value> {
    let s = node.group0().view.local();
    let messages: u64 = s.queues.iter().map(|(_, r)| stored(&s, r.id)).sum();
    let mut groups: Vec<&str> = s.cursors.iter().map(|(k, _)| k.2.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    Json(json!({
        "queues": s.queues.len(), "partitions": s.partitions.len(), "messages": messages,
        "consumerGroups": groups.len(), "deadLetters": s.dlq.len(), "kvKeys": s.kv.len(),
        "applied": s.applied.index, "time": iso_time(chrono::Utc::now().timestamp_micros()),
    }))
}

/// Queue counts by namespace or by task.
fn tally(node: &Node, pick: impl Fn(&QueueRow) -> Option<&String>, label: &str) -> Json<Value> {
    let s = node.group0().view.local();
    let mut counts: BTreeMap<&String, usize> = BTreeMap::new();
    for (_, row) in s.queues.iter() {
        if let Some(v) = pick(row) {
            *counts.entry(v).or_default() += 1;
        }
    }
    let rows: Vec<Value> = counts.into_iter().map(|(k, n)| json!({label: k, "queues": n})).collect();
    Json(json!({ format!("{label}s"): rows }))
}

pub async fn namespaces(State(node): State<Arc<Node>>) -> Json<Value> {
    tally(&node, |r| r.namespace.as_ref(), "namespace")
}

pub async fn tasks(State(node): State<Arc<Node>>) -> Json<Value> {
    tally(&node, |r| r.task.as_ref(), "task")
}

/// Whether a queue passes a listing's `search`, `namespace` and `task` filters.
pub fn queue_matches(q: &HashMap<String, String>, name: &str, row: &QueueRow) -> bool {
    q.get("search").is_none_or(|t| name.contains(t.as_str()))
        && q.get("namespace").is_none_or(|n| row.namespace.as_ref() == Some(n))
        && q.get("task").is_none_or(|t| row.task.as_ref() == Some(t))
}

pub async fn queues(State(node): State<Arc<Node>>, Query(q): Params) -> Result<Json<Value>, ApiError> {
    let (limit, skip) = page(&q)?;
    let s = node.group0().view.local();
    let matching: Vec<(&String, &QueueRow)> =
        s.queues.iter().filter(|(name, row)| queue_matches(&q, name, row)).collect();
    let rows: Vec<Value> = matching.iter().skip(skip).take(limit).map(|(n, r)| queue_json(&s, n, r)).collect();
    Ok(Json(json!({"queues": rows, "total": matching.len(), "limit": limit, "offset": skip})))
}

pub fn unknown_queue(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "unknown_queue", format!("no queue {name}"))
}

pub async fn queue(State(node): State<Arc<Node>>, Path(name): Path<String>) -> Result<Json<Value>, ApiError> {
    let s = node.group0().view.local();
    let row = s.queues.get(&name).ok_or_else(|| unknown_queue(&name))?;
    let mut v = queue_json(&s, &name, row);
    v["partitions"] = Value::Array(partitions_json(&s, row.id));
    Ok(Json(v))
}

pub async fn depth(
    State(node): State<Arc<Node>>,
    Path(name): Path<String>,
    Query(q): Params,
) -> Result<Json<Value>, ApiError> {
    let group = q.get("group").filter(|g| !g.is_empty()).map_or(QUEUE_MODE, String::as_str);
    let s = node.group0().view.local();
    let id = s.queue_id(&name).ok_or_else(|| unknown_queue(&name))?;
    let parts: Vec<Value> = s
        .partitions
        .range((id, 0)..=(id, u64::MAX))
        .map(|((_, p), r)| json!({"partition": r.name, "pending": pending(&s, id, *p, group)}))
        .collect();
    let depth: u64 = parts.iter().map(|p| p["pending"].as_u64().unwrap_or(0)).sum();
    Ok(Json(json!({"queue": name, "group": group, "depth": depth, "partitions": parts})))
}

pub async fn partitions(State(node): State<Arc<Node>>, Query(q): Params) -> Result<Json<Value>, ApiError> {
    let s = node.group0().view.local();
    let mut rows = Vec::new();
    for (name, row) in s.queues.iter().filter(|(n, _)| q.get("queue").is_none_or(|want| want == *n)) {
        for mut p in partitions_json(&s, row.id) {
            p["queue"] = json!(name);
            rows.push(p);
        }
    }
    Ok(Json(json!({"partitions": rows, "total": rows.len()})))
}
