//! `POST /api/v1/push`: `{items: [{queue, partition?, payload, transactionId?,
//! traceId?}]}`, all items one atomic entry. Answers 201 with one result per
//! item; a transactionId the partition already holds answers `duplicate` with
//! the original offset.

use super::auth::ProducerSub;
use super::body::{body_bytes, json_object, objects, Fields};
use super::error::ApiError;
use super::ids::{message_uuid, partition_uuid};
use super::names;
use super::push_binary;
use crate::config::Settings;
use crate::encryption::Sealer;
use crate::message::Message;
use crate::node::Node;
use crate::planner::command::{PushItem, PushOutcome, PushStatus};
use crate::planner::push::QueueFull;
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::{header, HeaderMap};
use axum::Extension;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub const DEFAULT_PARTITION: &str = "Default";

pub async fn push(
    State(node): State<Arc<Node>>,
    producer: Option<Extension<ProducerSub>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let producer = ProducerSub::of(producer);
    if is_binary(&headers) {
        return push_binary_body(&node, body, producer.as_deref()).await;
    }
    let body = json_object(body)?;
    let items = Fields::new(&body, "").array("items")?;
    if items.is_empty() {
        return Err(ApiError::bad_request("invalid_field", "items must hold at least one item"));
    }
    if items.len() > node.settings.push_max_items {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_items",
            format!("a push carries at most {} items (QUEEN_PUSH_MAX_ITEMS)", node.settings.push_max_items),
        ));
    }
    let mut sealer = node.sealer();
    let items = objects(items, "items")?
        .iter()
        .map(|item| push_item(item, &node.settings, &mut sealer, producer.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let (names, outcomes) = propose(&node, items).await?;
    Ok((StatusCode::CREATED, Json(results_json(names, &outcomes))))
}

pub async fn propose(
    node: &Node,
    items: Vec<PushItem>,
) -> Result<(Vec<(String, String, String)>, Vec<PushOutcome>), ApiError> {
    let names = items
        .iter()
        .map(|i| {
            (
                i.queue.clone(),
                i.partition.clone(),
                i.transaction_id().expect("an HTTP push item is one message").to_string(),
            )
        })
        .collect();
    // A push whose queues lie in several raft groups is one entry per
    // group, proposed together: atomic per group, answered per item.
    let outcomes = node
        .ask_split(
            items,
            |node, i| node.group_of(&i.queue),
            |group, items| async move {
                match group.replicator.ask(Typed::push(items)).await? {
                    Ok(outcomes) => Ok(outcomes),
                    Err(full) => Err(queue_full(&full)),
                }
            },
        )
        .await?;
    Ok((names, outcomes))
}

fn results_json(names: Vec<(String, String, String)>, outcomes: &[PushOutcome]) -> Value {
    Value::Array(
        outcomes
            .iter()
            .zip(names)
            .enumerate()
            .map(|(index, (o, (queue, partition, transaction_id)))| {
                json!({
                    "index": index,
                    "status": if o.status == PushStatus::Queued { "queued" } else { "duplicate" },
                    "transactionId": transaction_id,
                    "queue": queue,
                    "partition": partition,
                    "partitionId": partition_uuid(o.queue_id, o.partition_id),
                    "offset": o.offset,
                    "messageId": message_uuid(o.partition_id, o.offset),
                })
            })
            .collect(),
    )
}

/// Whether the request carries a binary body (`push_binary.rs`).
pub fn is_binary(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(push_binary::CONTENT_TYPE))
}

/// A push in the binary body of `push_binary.rs`.
async fn push_binary_body(
    node: &Node,
    body: Result<Bytes, BytesRejection>,
    producer: Option<&str>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (decoded, flags) = push_binary::decode(&body_bytes(body)?, node.settings.max_body_bytes)?;
    if decoded.is_empty() {
        return Err(ApiError::bad_request("invalid_field", "a push carries at least one item"));
    }
    let items = binary_items(node, decoded, producer)?;
    let (names, outcomes) = propose(node, items).await?;
    if flags & push_binary::FLAG_COUNTS != 0 {
        let queued = outcomes.iter().filter(|o| o.status == PushStatus::Queued).count();
        let answer =
            json!({"count": outcomes.len(), "queued": queued, "duplicate": outcomes.len() - queued, "error": 0});
        return Ok((StatusCode::CREATED, Json(answer)));
    }
    Ok((StatusCode::CREATED, Json(results_json(names, &outcomes))))
}

/// One JSON push item, stamped with the authenticated `producer` (a
/// `producerSub` in the body is not read) and sealed when its queue is
/// encrypted.
pub fn push_item(
    item: &Fields<'_>,
    settings: &Settings,
    sealer: &mut Sealer<'_>,
    producer: Option<&str>,
) -> Result<PushItem, ApiError> {
    let max_payload = settings.max_payload_bytes;
    let queue = item.name_str("queue")?;
    let partition = item.opt_str("partition")?.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PARTITION);
    for (field, name) in [("queue", queue), ("partition", partition)] {
        if !names::is_valid(name) {
            return Err(item.mistyped(field, names::RULE));
        }
    }
    let payload = item.map.get("payload").or_else(|| item.map.get("data")).ok_or_else(|| item.missing("payload"))?;
    let value = serde_json::to_vec(payload).expect("a parsed JSON value serializes");
    if value.len() > max_payload {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!(
                "{}.payload is {} bytes, over the limit of {max_payload} (QUEEN_MAX_PAYLOAD_BYTES)",
                item.path,
                value.len()
            ),
        ));
    }
    let transaction_id = match item.opt_str("transactionId")? {
        Some(t) if !t.is_empty() => t.to_string(),
        _ => uuid::Uuid::new_v4().to_string(),
    };
    let mut message = Message {
        trace_id: item.opt_str("traceId")?.map(str::to_string),
        producer_sub: producer.map(str::to_string),
        ..Message::new(transaction_id, value)
    };
    sealer.seal(queue, &mut message)?;
    Ok(PushItem::new(queue.to_string(), partition.to_string(), &message, settings.zstd_level))
}

/// The decoded items of a binary body as push items, each checked and
/// stamped as a JSON item would be.
pub fn binary_items(
    node: &Node,
    decoded: Vec<push_binary::BinaryItem>,
    producer: Option<&str>,
) -> Result<Vec<PushItem>, ApiError> {
    if decoded.len() > node.settings.push_max_items {
        let max = node.settings.push_max_items;
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_items",
            format!("a push carries at most {max} items (QUEEN_PUSH_MAX_ITEMS)"),
        ));
    }
    let mut items = Vec::with_capacity(decoded.len());
    let mut sealer = node.sealer();
    for (i, d) in decoded.into_iter().enumerate() {
        if d.payload.len() > node.settings.max_payload_bytes {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("item {i} is over QUEEN_MAX_PAYLOAD_BYTES"),
            ));
        }
        for name in [&d.queue, &d.partition] {
            if !names::is_valid(name) {
                return Err(ApiError::bad_request(
                    "invalid_field",
                    format!("item {i}: queue and partition names are {}", names::RULE),
                ));
            }
        }
        let transaction_id = d.transaction_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut message =
            Message { producer_sub: producer.map(str::to_string), ..Message::new(transaction_id, d.payload) };
        sealer.seal(&d.queue, &mut message)?;
        items.push(PushItem::new(d.queue, d.partition, &message, node.settings.zstd_level));
    }
    Ok(items)
}

pub fn queue_full_message(full: &QueueFull) -> String {
    format!(
        "queue {:?} holds {} unfinished messages and its maxSize is {}: the push would go past it",
        full.queue, full.unfinished, full.max_size
    )
}

/// A push refused because a queue is at its `maxSize`.
pub fn queue_full(full: &QueueFull) -> ApiError {
    ApiError::queue_full(queue_full_message(full))
}
