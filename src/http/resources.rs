//! What the node holds, for operators and dashboards (`/api/v1/resources/...`):
//! an overview, namespaces, tasks, queues (filtered and paged), one queue
//! with its partitions, a queue's depth for a consumer group, and partitions.

use super::body::page;
use super::error::ApiError;
use super::ids::{iso_time, partition_uuid};
use crate::node::Node;
use crate::placement;
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

/// What a queue's own readers (queue mode) have not finished in it.
pub fn queue_pending(store: &Store, queue: u64) -> u64 {
    store.partitions.range((queue, 0)..=(queue, u64::MAX)).map(|((q, p), _)| pending(store, *q, *p, QUEUE_MODE)).sum()
}

/// Counts over every queue, from each raft group that holds queues.
pub struct Totals {
    pub queues: usize,
    pub partitions: usize,
    pub messages: u64,
    pub pending: u64,
    pub consumer_groups: usize,
    pub dead_letters: usize,
}

pub fn totals(node: &Node) -> Totals {
    let mut t = Totals { queues: 0, partitions: 0, messages: 0, pending: 0, consumer_groups: 0, dead_letters: 0 };
    let mut groups: Vec<String> = Vec::new();
    for placed in node.queue_groups() {
        let s = placed.view.local();
        t.queues += s.queues.len();
        t.partitions += s.partitions.len();
        t.messages += s.queues.iter().map(|(_, r)| stored(&s, r.id)).sum::<u64>();
        t.pending += s.queues.iter().map(|(_, r)| queue_pending(&s, r.id)).sum::<u64>();
        t.dead_letters += s.dlq.len();
        groups.extend(s.cursors.iter().map(|(k, _)| k.2.clone()));
    }
    groups.sort_unstable();
    groups.dedup();
    t.consumer_groups = groups.len();
    t
}

pub async fn overview(State(node): State<Arc<Node>>) -> Json<Value> {
    let t = totals(&node);
    let s = node.group0().view.local();
    Json(json!({
        "queues": t.queues, "partitions": t.partitions, "messages": t.messages,
        "consumerGroups": t.consumer_groups, "deadLetters": t.dead_letters, "kvKeys": crate::internal_kv::user_rows(&s),
        "applied": s.applied.index, "time": iso_time(chrono::Utc::now().timestamp_micros()),
    }))
}

/// Queue counts by namespace or by task.
fn tally(node: &Node, pick: impl Fn(&QueueRow) -> Option<&String>, label: &str) -> Json<Value> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for placed in node.queue_groups() {
        let s = placed.view.local();
        for (_, row) in s.queues.iter() {
            if let Some(v) = pick(row) {
                *counts.entry(v.clone()).or_default() += 1;
            }
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
    // By name, as one store lists them, across the groups that hold queues.
    let mut matching: Vec<(String, Value)> = Vec::new();
    for placed in node.queue_groups() {
        let s = placed.view.local();
        let rows = s.queues.iter().filter(|(name, row)| queue_matches(&q, name, row));
        matching.extend(rows.map(|(n, r)| (n.clone(), queue_json(&s, n, r))));
    }
    Ok(Json(queue_page(matching, limit, skip)))
}

/// One page of a queue listing gathered from every group: (name, row)
/// pairs in name order, as one store lists them.
pub fn queue_page(mut matching: Vec<(String, Value)>, limit: usize, skip: usize) -> Value {
    matching.sort_by(|a, b| a.0.cmp(&b.0));
    let total = matching.len();
    let rows: Vec<Value> = matching.into_iter().skip(skip).take(limit).map(|(_, v)| v).collect();
    json!({"queues": rows, "total": total, "limit": limit, "offset": skip})
}

pub fn unknown_queue(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "unknown_queue", format!("no queue {name}"))
}

pub async fn queue(State(node): State<Arc<Node>>, Path(name): Path<String>) -> Result<Json<Value>, ApiError> {
    let s = node.group_of(&name).view.local();
    let row = s.queues.get(&name).ok_or_else(|| unknown_queue(&name))?;
    let mut v = queue_json(&s, &name, row);
    v["partitions"] = Value::Array(partitions_json(&s, row.id));
    // Where it lives: 0 with one raft group (`placement.rs`).
    v["raftGroup"] = json!(placement::group_of_queue(&name, node.groups().len() as u32));
    Ok(Json(v))
}

pub async fn depth(
    State(node): State<Arc<Node>>,
    Path(name): Path<String>,
    Query(q): Params,
) -> Result<Json<Value>, ApiError> {
    let group = q.get("group").filter(|g| !g.is_empty()).map_or(QUEUE_MODE, String::as_str);
    let s = node.group_of(&name).view.local();
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
    let groups = node.groups_for(q.get("queue").map(String::as_str));
    let mut rows = Vec::new();
    for placed in groups {
        let s = placed.view.local();
        for (name, row) in s.queues.iter().filter(|(n, _)| q.get("queue").is_none_or(|want| want == *n)) {
            for mut p in partitions_json(&s, row.id) {
                p["queue"] = json!(name);
                rows.push(p);
            }
        }
    }
    Ok(Json(json!({"partitions": rows, "total": rows.len()})))
}
