//! Message traces: `POST /api/v1/traces` records an event a consumer reports
//! about a message it holds (the client's `message.trace({...})`); the GET
//! routes read events back by message and by trace name, and list the names.
//! Events are KV rows in the internal namespace `queen-traces`, written
//! through the planner like any write and expiring after
//! QUEEN_TRACE_RETENTION_S:
//!
//! - `m/<partitionId>/<transactionId>/<stamp>`: an event, by message;
//! - `n/<trace name>/<stamp>`: the same event, under each of its names.
//!
//! `<stamp>` is the time in microseconds (20 digits) and the event's id, so
//! keys sort by time.

use super::body::{json_object, page, Fields};
use super::error::ApiError;
use super::names;
use crate::iso_time::{iso_time, parse_iso_time};
use crate::node::Node;
use crate::planner::command::QUEUE_MODE;
use crate::planner::kv::{row_key, Expiry, KvAnswer, KvKind, KvOp};
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::internal_kv::TRACES as NS;
/// The most names one event may carry.
const MAX_NAMES: usize = 16;

fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

pub async fn record(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let transaction_id = f.name_str("transactionId")?;
    let partition_id = f.name_str("partitionId")?;
    let group = f.opt_str("consumerGroup")?.filter(|g| !g.is_empty()).unwrap_or(QUEUE_MODE);
    let event_type = f.opt_str("eventType")?.filter(|e| !e.is_empty()).unwrap_or("info");
    let data = body.get("data").filter(|d| !d.is_null()).ok_or_else(|| f.missing("data"))?;
    let names: Vec<String> = match body.get("traceNames") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(items)) => items
            .iter()
            .map(|n| match n.as_str() {
                Some(s) if !s.is_empty() && s.len() <= names::MAX_NAME_BYTES => Ok(s.to_string()),
                _ => Err(f.mistyped("traceNames", "an array of names of 1 to 255 bytes")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(f.mistyped("traceNames", "an array of names")),
    };
    if names.len() > MAX_NAMES {
        return Err(ApiError::bad_request(
            "too_many_trace_names",
            format!("an event carries at most {MAX_NAMES} names"),
        ));
    }
    let at = now_us();
    let id = uuid::Uuid::new_v4().to_string();
    let event = json!({
        "id": id,
        "transactionId": transaction_id,
        "partitionId": partition_id,
        "consumerGroup": group,
        "traceNames": names,
        "eventType": event_type,
        "data": data,
        "createdAt": iso_time(at),
    })
    .to_string();
    let stamp = format!("{at:020}-{id}");
    let expiry = Expiry::Seconds(node.settings.trace_retention_s);
    let put = |key: String| KvOp {
        ns: NS.to_string(),
        kind: KvKind::Put { key, value: event.clone(), expiry, expect: None },
        required: true,
    };
    let mut ops = vec![put(format!("m/{partition_id}/{transaction_id}/{stamp}"))];
    ops.extend(names.iter().map(|n| put(format!("n/{n}/{stamp}"))));
    match node.group0().replicator.ask(Typed::kv(ops)).await? {
        KvAnswer::Results(_) => Ok(Json(json!({"id": id, "createdAt": iso_time(at)}))),
        KvAnswer::Precondition { reason, .. } => Err(ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("the trace's rows were refused ({reason:?}); they carry no precondition"),
        )),
    }
}

/// The live events under `prefix`, oldest first.
fn events(node: &Node, prefix: &str) -> Vec<(String, Value)> {
    let now = now_us();
    let full = row_key(NS, prefix);
    let store = node.group0().view.local();
    store
        .kv
        .range(full.clone()..)
        .take_while(|(k, _)| k.starts_with(&full))
        .filter(|(_, row)| row.live(now))
        .filter_map(|(k, row)| Some((k[full.len()..].to_string(), serde_json::from_str(&row.value).ok()?)))
        .collect()
}

pub async fn for_message(
    State(node): State<Arc<Node>>,
    Path((partition_id, transaction_id)): Path<(String, String)>,
) -> Json<Value> {
    let traces: Vec<Value> =
        events(&node, &format!("m/{partition_id}/{transaction_id}/")).into_iter().map(|e| e.1).collect();
    Json(json!({"transactionId": transaction_id, "partitionId": partition_id, "traces": traces, "count": traces.len()}))
}

fn time_param(q: &HashMap<String, String>, name: &'static str) -> Result<Option<i64>, ApiError> {
    q.get(name)
        .map(|t| {
            parse_iso_time(t)
                .ok_or_else(|| ApiError::bad_request("invalid_query", format!("{name} is an ISO-8601 time")))
        })
        .transpose()
}

pub async fn by_name(
    State(node): State<Arc<Node>>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let (limit, offset) = page(&q)?;
    let (from, to) = (time_param(&q, "from")?.unwrap_or(i64::MIN), time_param(&q, "to")?.unwrap_or(i64::MAX));
    let matching: Vec<Value> = events(&node, &format!("n/{name}/"))
        .into_iter()
        .filter(|(stamp, _)| stamp.get(..20).and_then(|t| t.parse::<i64>().ok()).is_some_and(|t| from <= t && t <= to))
        .map(|e| e.1)
        .collect();
    let total = matching.len();
    // Newest first, as a trace viewer reads them.
    let traces: Vec<Value> = matching.into_iter().rev().skip(offset).take(limit).collect();
    Ok(Json(json!({"traceName": name, "traces": traces, "total": total, "limit": limit, "offset": offset})))
}

pub async fn names(
    State(node): State<Arc<Node>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let (limit, offset) = page(&q)?;
    let search = q.get("search").map(|s| s.to_lowercase());
    let mut counts: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (rest, event) in events(&node, "n/") {
        let Some((name, _stamp)) = rest.rsplit_once('/') else { continue };
        if search.as_ref().is_some_and(|s| !name.to_lowercase().contains(s)) {
            continue;
        }
        let last = event["createdAt"].as_str().unwrap_or_default().to_string();
        let slot = counts.entry(name.to_string()).or_insert((0, String::new()));
        slot.0 += 1;
        slot.1 = slot.1.clone().max(last);
    }
    let total = counts.len();
    let names: Vec<Value> = counts
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(name, (count, last))| json!({"traceName": name, "count": count, "lastSeen": last}))
        .collect();
    Ok(Json(json!({"names": names, "total": total, "limit": limit, "offset": offset})))
}
