//! Consumer-group administration: list, describe, lagging, delete, seek,
//! re-subscribe (`/api/v1/consumer-groups/...`).

use super::body::{optional_object, Fields};
use super::error::ApiError;
use super::ids::iso_time;
use super::share_view;
use crate::node::Node;
use crate::planner::command::{Command, SeekTo};
use crate::replicate::typed::Typed;
use crate::share_groups;
use crate::store::{CursorKey, Store};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// One group's position on one partition; a share group's also names the
/// records its members hold.
fn partition_view(store: &Store, key: &CursorKey, now_us: i64, share: bool) -> Option<Value> {
    let cursor = store.cursors.get(key)?;
    let row = store.partition(key.0, key.1)?;
    let pending = row.next_offset.saturating_sub(cursor.committed).saturating_sub(cursor.done_above.len() as u64);
    let oldest_us = (pending > 0).then(|| store.locator.timestamp_of(key.0, key.1, cursor.committed)).flatten();
    let mut view = json!({
        "partition": row.name,
        "committedOffset": cursor.committed,
        "highWatermark": row.next_offset,
        "lag": pending,
        "lagSeconds": oldest_us.map_or(0.0, |t| ((now_us - t).max(0) as f64) / 1e6),
        "leased": cursor.lease.as_ref().is_some_and(|l| l.expires_us > now_us),
        "leaseExpiresAt": cursor.lease.as_ref().map(|l| iso_time(l.expires_us)),
    });
    if share {
        view["share"] = share_view::partition(store, key, now_us);
    }
    Some(view)
}

/// Every group, with its queues and partitions, from every raft group
/// that holds queues; share groups (declared in group 0) named even before
/// any member took a record.
fn describe_all(node: &Node, now_us: i64) -> BTreeMap<String, BTreeMap<String, Vec<Value>>> {
    let shares: BTreeSet<String> = share_groups::names(&node.group0().view.local()).into_iter().collect();
    let mut out: BTreeMap<String, BTreeMap<String, Vec<Value>>> = BTreeMap::new();
    for name in &shares {
        out.entry(name.clone()).or_default();
    }
    for placed in node.queue_groups() {
        let store = placed.view.local();
        for (key, _) in store.cursors.iter() {
            let Some(queue) = store.queue_name(key.0) else { continue };
            if let Some(view) = partition_view(&store, key, now_us, shares.contains(&key.2)) {
                out.entry(key.2.clone()).or_default().entry(queue.to_string()).or_default().push(view);
            }
        }
        for ((q, group), _) in store.groups.iter() {
            if let Some(queue) = store.queue_name(*q) {
                out.entry(group.clone()).or_default().entry(queue.to_string()).or_default();
            }
        }
    }
    out
}

/// A group's view; a share group's names its members and how many records
/// they hold.
fn group_json(node: &Node, now_us: i64, name: &str, queues: &BTreeMap<String, Vec<Value>>) -> Value {
    let lag: u64 = queues.values().flatten().map(|p| p["lag"].as_u64().unwrap_or(0)).sum();
    let in_flight: u64 = queues.values().flatten().map(|p| p["share"]["inFlightCount"].as_u64().unwrap_or(0)).sum();
    let queues: Vec<Value> = queues.iter().map(|(q, parts)| json!({"queueName": q, "partitions": parts})).collect();
    let mut view = json!({"name": name, "consumerGroup": name, "totalLag": lag, "queues": queues});
    if share_groups::row(&node.group0().view.local(), name).is_some() {
        view["share"] = json!(true);
        view["inFlight"] = json!(in_flight);
        let members = node.queue_groups().iter().flat_map(|g| share_view::members(node, &g.view.local(), name, now_us));
        view["members"] = Value::Array(members.collect());
    }
    view
}

pub async fn list(State(node): State<Arc<Node>>) -> Json<Value> {
    let now_us = chrono::Utc::now().timestamp_micros();
    let all = describe_all(&node, now_us);
    Json(Value::Array(all.iter().map(|(g, q)| group_json(&node, now_us, g, q)).collect()))
}

pub async fn describe(State(node): State<Arc<Node>>, Path(group): Path<String>) -> Result<Json<Value>, ApiError> {
    let now_us = chrono::Utc::now().timestamp_micros();
    let all = describe_all(&node, now_us);
    let queues = all.get(&group).ok_or_else(|| {
        ApiError::new(axum::http::StatusCode::NOT_FOUND, "unknown_consumer_group", format!("no consumer group {group}"))
    })?;
    Ok(Json(group_json(&node, now_us, &group, queues)))
}

pub async fn lagging(
    State(node): State<Arc<Node>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let min: f64 = match q.get("minLagSeconds") {
        Some(v) => v.parse().map_err(|_| ApiError::bad_request("invalid_field", "minLagSeconds must be a number"))?,
        None => 60.0,
    };
    let all = describe_all(&node, chrono::Utc::now().timestamp_micros());
    let mut out = Vec::new();
    for (group, queues) in &all {
        for (queue, parts) in queues {
            for p in
                parts.iter().filter(|p| p["lagSeconds"].as_f64().unwrap_or(0.0) >= min && p["lag"].as_u64() > Some(0))
            {
                let mut row = p.clone();
                row["consumerGroup"] = json!(group);
                row["queueName"] = json!(queue);
                out.push(row);
            }
        }
    }
    Ok(Json(Value::Array(out)))
}

fn delete_metadata(q: &HashMap<String, String>) -> bool {
    q.get("deleteMetadata").is_none_or(|v| v != "false")
}

/// A change to a consumer group: in the named queue's raft group, or for
/// one that names no queue, in every group that holds queues, summed.
async fn changed(node: &Node, queue: Option<&str>, command: Command) -> Result<usize, ApiError> {
    let groups = node.groups_for(queue);
    let mut changed = 0;
    for group in groups {
        changed += group.replicator.ask(Typed::group(command.clone())).await?;
    }
    Ok(changed)
}

pub async fn delete(
    State(node): State<Arc<Node>>,
    Path(group): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let metadata = delete_metadata(&q);
    let partitions = changed(&node, None, Command::DeleteGroup { queue: None, group: group.clone(), metadata }).await?;
    Ok(Json(
        json!({"success": true, "consumerGroup": group, "deletedPartitions": partitions, "metadataDeleted": metadata}),
    ))
}

pub async fn delete_for_queue(
    State(node): State<Arc<Node>>,
    Path((group, queue)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let metadata = delete_metadata(&q);
    let command = Command::DeleteGroup { queue: Some(queue.clone()), group: group.clone(), metadata };
    let partitions = changed(&node, Some(&queue), command).await?;
    Ok(Json(json!({
        "success": true, "consumerGroup": group, "queueName": queue, "deletedPartitions": partitions, "metadataDeleted": metadata
    })))
}

fn parse_time(f: &Fields<'_>, field: &str) -> Result<Option<i64>, ApiError> {
    f.opt_str(field)?
        .map(|t| {
            chrono::DateTime::parse_from_rfc3339(t)
                .map(|t| t.timestamp_micros())
                .map_err(|_| f.mistyped(field, "an ISO-8601 time"))
        })
        .transpose()
}

pub async fn seek(
    State(node): State<Arc<Node>>,
    Path((group, queue)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let body = optional_object(&body)?.unwrap_or_default();
    let f = Fields::new(&body, "");
    let to = if body.get("toEnd") == Some(&Value::Bool(true)) {
        SeekTo::End
    } else if let Some(t) = parse_time(&f, "timestamp")? {
        SeekTo::Time(t)
    } else {
        return Err(ApiError::bad_request("invalid_body", "a seek names toEnd: true or a timestamp"));
    };
    let command = Command::SeekGroup { queue: queue.clone(), group: group.clone(), to };
    let partitions = changed(&node, Some(&queue), command).await?;
    Ok(Json(json!({"success": true, "consumerGroup": group, "queueName": queue, "partitions": partitions})))
}

pub async fn resubscribe(
    State(node): State<Arc<Node>>,
    Path(group): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let body = optional_object(&body)?.unwrap_or_default();
    let f = Fields::new(&body, "");
    let from_us = parse_time(&f, "subscriptionTimestamp")?.ok_or_else(|| f.missing("subscriptionTimestamp"))?;
    let partitions = changed(&node, None, Command::Resubscribe { group: group.clone(), from_us }).await?;
    Ok(Json(json!({"success": true, "consumerGroup": group, "partitions": partitions})))
}

/// Statistics are computed when asked for; there is nothing to refresh,
/// and the answer says so rather than claiming a refresh.
pub async fn refresh_stats() -> Json<Value> {
    Json(json!({"success": true, "refreshed": false, "reason": "statistics are computed on every read"}))
}
