//! `POST /api/v1/push`: `{items: [{queue, partition?, payload, transactionId?,
//! traceId?}]}`, all items one atomic entry. Answers 201 with one result per
//! item; a transactionId the partition already holds answers `duplicate` with
//! the original offset.

use super::body::{json_object, objects, Fields};
use super::error::ApiError;
use super::ids::{message_uuid, partition_uuid};
use crate::config::Settings;
use crate::message::Message;
use crate::node::Node;
use crate::planner::command::{Answer, Command, PushItem, PushStatus};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub const DEFAULT_PARTITION: &str = "Default";
pub const MAX_NAME_BYTES: usize = 255;

pub async fn push(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
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
    let items =
        objects(items, "items")?.iter().map(|item| push_item(item, &node.settings)).collect::<Result<Vec<_>, _>>()?;
    let names: Vec<(String, String, String)> =
        items.iter().map(|i| (i.queue.clone(), i.partition.clone(), i.transaction_id.clone())).collect();
    let Answer::Pushed(outcomes) = node.replicator.propose(Command::Push(items)).await? else {
        return Err(ApiError::mismatched_answer());
    };
    let results = outcomes
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
        .collect();
    Ok((StatusCode::CREATED, Json(Value::Array(results))))
}

pub fn push_item(item: &Fields<'_>, settings: &Settings) -> Result<PushItem, ApiError> {
    let max_payload = settings.max_payload_bytes;
    let queue = item.name_str("queue")?;
    let partition = item.opt_str("partition")?.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PARTITION);
    for (field, name) in [("queue", queue), ("partition", partition)] {
        if name.len() > MAX_NAME_BYTES {
            return Err(item.mistyped(field, "at most 255 bytes long"));
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
    let message = Message {
        transaction_id,
        trace_id: item.opt_str("traceId")?.map(str::to_string),
        key: None,
        value,
        headers: vec![],
    };
    Ok(PushItem::new(queue.to_string(), partition.to_string(), &message, settings.zstd_level))
}
