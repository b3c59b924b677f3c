//! Status and analytics for operators (`/api/v1/status...`,
//! `/api/v1/analytics/...`), answered from this node's applied state, its
//! counters since boot, and the process as Linux reports it. The node keeps
//! no history of its own: a time series is Prometheus's job (`/metrics`).

use super::body::page;
use super::error::ApiError;
use super::ids::iso_time;
use super::resources::{
    partitions_json, pending, queue_matches, queue_page, queue_pending, stored, totals, unknown_queue,
};
use crate::node::Node;
use crate::store::Store;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

type Params = Query<HashMap<String, String>>;

fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

fn uptime_s(node: &Node) -> f64 {
    (now_us() - node.started_us) as f64 / 1e6
}

/// The groups consuming a queue (a cursor or a subscription there), each
/// with what it has not finished over all the queue's partitions and how
/// many partitions it has a cursor on.
fn groups_on(store: &Store, queue: u64) -> BTreeMap<String, (u64, usize)> {
    let mut out: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    for ((_, _, group), _) in store.cursors.range((queue, 0, String::new())..).take_while(|((q, _, _), _)| *q == queue)
    {
        out.entry(group.clone()).or_default().1 += 1;
    }
    for ((_, group), _) in store.groups.range((queue, String::new())..).take_while(|((q, _), _)| *q == queue) {
        out.entry(group.clone()).or_default();
    }
    for (group, slot) in out.iter_mut() {
        slot.0 = store
            .partitions
            .range((queue, 0)..=(queue, u64::MAX))
            .map(|((q, p), _)| pending(store, *q, *p, group))
            .sum();
    }
    out
}

fn dead_letters(store: &Store, queue: u64) -> usize {
    store.dlq.range((queue, 0, String::new(), 0)..).take_while(|((q, _, _, _), _)| *q == queue).count()
}

fn last_write_us(store: &Store, queue: u64) -> i64 {
    store.partitions.range((queue, 0)..=(queue, u64::MAX)).map(|(_, r)| r.last_write_us).max().unwrap_or(0)
}

pub async fn status(State(node): State<Arc<Node>>) -> Json<Value> {
    let t = totals(&node);
    let s = node.group0().view.local();
    Json(json!({
        "status": "healthy",
        "version": env!("CARGO_PKG_VERSION"),
        "replicator": node.replicator_name,
        "role": "leader",
        "applied": s.applied.index,
        "term": s.applied.term,
        "time": iso_time(now_us()),
        "startedAt": iso_time(node.started_us),
        "uptimeSeconds": uptime_s(&node),
        "queues": t.queues,
        "partitions": t.partitions,
        "messages": t.messages,
        "pending": t.pending,
        "consumerGroups": t.consumer_groups,
        "deadLetters": t.dead_letters,
        "kvKeys": crate::internal_kv::user_rows(&s),
        "storageFull": node.disk_gate.is_full(),
        "listeners": {"http": node.settings.http_addr.to_string(), "kafka": node.settings.kafka_addr.to_string()},
    }))
}

pub async fn queues(State(node): State<Arc<Node>>, Query(q): Params) -> Result<Json<Value>, ApiError> {
    let (limit, skip) = page(&q)?;
    let mut matching: Vec<(String, Value)> = Vec::new();
    for placed in node.queue_groups() {
        let s = placed.view.local();
        for (name, row) in s.queues.iter().filter(|(name, row)| queue_matches(&q, name, row)) {
            matching.push((
                name.clone(),
                json!({
                    "name": name, "namespace": row.namespace, "task": row.task,
                    "partitions": s.partitions.range((row.id, 0)..=(row.id, u64::MAX)).count(),
                    "messages": stored(&s, row.id), "pending": queue_pending(&s, row.id),
                    "consumerGroups": groups_on(&s, row.id).len(), "deadLetters": dead_letters(&s, row.id),
                    "lastWriteAt": iso_time(last_write_us(&s, row.id)),
                }),
            ));
        }
    }
    Ok(Json(queue_page(matching, limit, skip)))
}

pub async fn queue(State(node): State<Arc<Node>>, Path(name): Path<String>) -> Result<Json<Value>, ApiError> {
    let s = node.group_of(&name).view.local();
    let row = s.queues.get(&name).ok_or_else(|| unknown_queue(&name))?;
    let groups: Vec<Value> = groups_on(&s, row.id)
        .into_iter()
        .map(|(group, (pending, partitions))| json!({"consumerGroup": group, "pending": pending, "partitions": partitions}))
        .collect();
    Ok(Json(json!({
        "name": name, "namespace": row.namespace, "task": row.task, "createdAt": iso_time(row.created_us),
        "messages": stored(&s, row.id), "pending": queue_pending(&s, row.id), "deadLetters": dead_letters(&s, row.id),
        "lastWriteAt": iso_time(last_write_us(&s, row.id)),
        "partitions": partitions_json(&s, row.id), "consumerGroups": groups,
    })))
}

/// Counters since boot, with their average rates.
pub async fn analytics(State(node): State<Arc<Node>>) -> Json<Value> {
    let m = &node.metrics;
    let up = uptime_s(&node).max(1e-3);
    let totals = [
        ("messagesAppended", m.messages_appended.get()),
        ("duplicates", m.duplicates.get()),
        ("entriesApplied", m.entries_applied.get()),
        ("groupCommits", m.group_commits.get()),
        ("qlogBytesWritten", m.qlog_bytes_written.get()),
        ("checkpoints", m.checkpoints.get()),
    ];
    let per_second: serde_json::Map<String, Value> =
        totals.iter().map(|(k, v)| (k.to_string(), json!(*v as f64 / up))).collect();
    let totals: serde_json::Map<String, Value> = totals.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    Json(json!({"since": iso_time(node.started_us), "uptimeSeconds": up, "totals": totals, "perSecond": per_second}))
}

/// A `key: value kB` line of /proc/self/status, in bytes.
fn proc_status_bytes(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

pub async fn system_metrics(State(node): State<Arc<Node>>) -> Json<Value> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let threads = status
        .lines()
        .find(|l| l.starts_with("Threads:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
    let open_files = std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
    // utime and stime, fields 14 and 15 of /proc/self/stat, in clock ticks (100 per second on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    let cpu_seconds = (ticks(11) + ticks(12)) / 100.0;
    Json(json!({
        "time": iso_time(now_us()),
        "uptimeSeconds": uptime_s(&node),
        "cpuSeconds": cpu_seconds,
        "rssBytes": proc_status_bytes(&status, "VmRSS:"),
        "virtualBytes": proc_status_bytes(&status, "VmSize:"),
        "threads": threads,
        "openFiles": open_files,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    }))
}

pub async fn worker_metrics(State(node): State<Arc<Node>>) -> Json<Value> {
    let runtime = tokio::runtime::Handle::current().metrics();
    Json(json!({
        "time": iso_time(now_us()),
        "uptimeSeconds": uptime_s(&node),
        "workers": runtime.num_workers(),
        "aliveTasks": runtime.num_alive_tasks(),
        "globalQueueDepth": runtime.global_queue_depth(),
    }))
}
