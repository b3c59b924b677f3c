//! `POST /api/v1/fetch`: reads by offset, as `queen/reads/offset_reads.py`
//! asks. No lease, no cursor: served from this node's applied state.

use super::body::{json_object, objects, Fields};
use super::error::ApiError;
use super::ids::{iso_time, kafka_fields, value_json};
use crate::message::Message;
use crate::node::{GroupCore, Node};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// The most entries one call may ask for.
pub const MAX_ENTRIES: usize = 1024;
/// The most payload bytes read for one entry, and the default budget.
pub const MAX_ENTRY_BYTES: u64 = 8 * 1024 * 1024;

pub const UNKNOWN_TOPIC_OR_PARTITION: &str = "UNKNOWN_TOPIC_OR_PARTITION";
pub const OFFSET_OUT_OF_RANGE: &str = "OFFSET_OUT_OF_RANGE";

struct Ask {
    queue: String,
    partition: String,
    offset: u64,
    max_bytes: u64,
}

pub async fn fetch(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let top = Fields::new(&body, "");
    let entries = top.array("entries")?;
    if entries.len() > MAX_ENTRIES {
        return Err(ApiError::bad_request(
            "too_many_entries",
            format!("a fetch asks for at most {MAX_ENTRIES} entries"),
        ));
    }
    let call_budget =
        top.opt_u64("maxBytes")?.unwrap_or(MAX_ENTRY_BYTES).clamp(1, MAX_ENTRY_BYTES * MAX_ENTRIES as u64);
    let asks = objects(entries, "entries")?
        .iter()
        .map(|e| {
            Ok(Ask {
                queue: e.name_str("queue")?.to_string(),
                partition: e.name_str("partition")?.to_string(),
                offset: e.opt_u64("offset")?.unwrap_or(0),
                max_bytes: e.opt_u64("maxBytes")?.unwrap_or(MAX_ENTRY_BYTES).clamp(1, MAX_ENTRY_BYTES),
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;

    // A reader acts on what it fetches: it reads the committed log.
    for group in node.groups_of(asks.iter().map(|a| a.queue.as_str())) {
        group.view.gate().await?;
    }
    // File reads block: keep them off the async workers.
    let answer = tokio::task::spawn_blocking(move || {
        let mut budget = call_budget;
        let entries: Vec<Value> = asks.iter().map(|a| read_entry(&node, a, &mut budget)).collect::<Result<_, _>>()?;
        Ok::<_, ApiError>(json!({ "entries": entries }))
    })
    .await
    .map_err(|e| ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))??;
    Ok(Json(answer))
}

fn read_entry(node: &Node, ask: &Ask, call_budget: &mut u64) -> Result<Value, ApiError> {
    let group = node.group_of(&ask.queue);
    let view = {
        let store = group.view.local();
        store.queue_id(&ask.queue).and_then(|q| store.partition_id(q, &ask.partition).map(|p| (q, p))).map(|(q, p)| {
            let row = store.partition(q, p).expect("a named partition has a row");
            (q, p, row.next_offset, row.log_start)
        })
    };
    let Some((queue, partition, high, log_start)) = view else {
        return Ok(entry_answer(ask, vec![], 0, 0, Some(UNKNOWN_TOPIC_OR_PARTITION)));
    };
    if ask.offset < log_start || ask.offset > high {
        return Ok(entry_answer(ask, vec![], high, log_start, Some(OFFSET_OUT_OF_RANGE)));
    }
    let budget = ask.max_bytes.min(*call_budget);
    let records = read_records(group, queue, partition, ask.offset, high, budget)?;
    *call_budget = call_budget.saturating_sub(records.1);
    Ok(entry_answer(ask, records.0, high, log_start, None))
}

/// Records from `offset` below `high`, at least one, until `budget` payload bytes.
fn read_records(
    group: &GroupCore,
    queue: u64,
    partition: u64,
    offset: u64,
    high: u64,
    budget: u64,
) -> Result<(Vec<Value>, u64), ApiError> {
    let (messages, used) =
        group.reader.read_from::<Message>(queue, partition, offset, high, budget).map_err(ApiError::storage)?;
    let records = messages
        .into_iter()
        .map(|m| {
            let mut record = json!({
                "offset": m.offset,
                "transactionId": m.message.transaction_id,
                "traceId": m.message.trace_id,
                "producerSub": m.message.producer_sub,
                "payload": value_json(&m.message),
                "ts": iso_time(m.timestamp_us),
            });
            if let Some((name, fields)) = kafka_fields(&m.message) {
                record[name] = fields;
            }
            record
        })
        .collect();
    Ok((records, used))
}

fn entry_answer(ask: &Ask, records: Vec<Value>, high: u64, log_start: u64, error: Option<&str>) -> Value {
    let next = records.last().and_then(|r| r["offset"].as_u64()).map_or(ask.offset, |o| o + 1);
    let mut v = json!({
        "queue": ask.queue,
        "partition": ask.partition,
        "records": records,
        "highWatermark": high,
        "logStartOffset": log_start,
        "nextOffset": next,
    });
    if let Some(e) = error {
        v["error"] = json!(e);
    }
    v
}
