//! `POST /api/v1/ack` and `POST /api/v1/ack/batch`. Answers 200 with one
//! result per acknowledgment, refusals included (`success: false` and an
//! `error` that names why), as the client expects.

use super::ack_places;
use super::body::{json_object, objects, Fields};
use super::error::ApiError;
use super::ids::parse_partition_uuid;
use crate::node::Node;
use crate::planner::command::{AckItem, AckOutcome, AckStatus, QUEUE_MODE};
use crate::planner::items::{Refused, REFUSED_UNKNOWN_MESSAGE};
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn ack(State(node): State<Arc<Node>>, body: Result<Bytes, BytesRejection>) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let group = f.opt_str("consumerGroup")?;
    acknowledge(&node, vec![f], group).await
}

pub async fn ack_batch(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let group = f.opt_str("consumerGroup")?;
    let items = objects(f.array("acknowledgments")?, "acknowledgments")?;
    acknowledge(&node, items, group).await
}

fn status(f: &Fields<'_>) -> Result<AckStatus, ApiError> {
    Ok(match f.opt_str("status")? {
        None | Some("completed" | "success" | "acked" | "ok") => AckStatus::Completed,
        Some("dlq") => AckStatus::DeadLetter,
        Some(_) => AckStatus::Failed,
    })
}

/// Each item as a command, or the refusal it gets without one.
pub fn item(f: &Fields<'_>, group: Option<&str>) -> Result<Result<AckItem, &'static str>, ApiError> {
    let transaction_id = f.name_str("transactionId")?.to_string();
    let partition = f.name_str("partitionId")?;
    let Some((queue_id, partition_id)) = parse_partition_uuid(partition) else {
        return Ok(Err(REFUSED_UNKNOWN_MESSAGE));
    };
    let group = f.opt_str("consumerGroup")?.or(group).filter(|g| !g.is_empty()).unwrap_or(QUEUE_MODE).to_string();
    Ok(Ok(AckItem {
        queue_id,
        partition_id,
        transaction_id,
        group,
        lease_id: f.opt_str("leaseId")?.filter(|l| !l.is_empty()).map(str::to_string),
        status: status(f)?,
        error: f.opt_str("error")?.map(str::to_string),
    }))
}

async fn acknowledge(node: &Node, fields: Vec<Fields<'_>>, group: Option<&str>) -> Result<Json<Value>, ApiError> {
    let parsed = fields.iter().map(|f| item(f, group)).collect::<Result<Vec<_>, _>>()?;
    let mut commands: Vec<AckItem> = parsed.iter().filter_map(|p| p.as_ref().ok().cloned()).collect();
    ack_places::resolve(node, &mut commands);
    let mut outcomes = node
        .ask_split(
            commands,
            |node, a| node.group_of_id(a.queue_id),
            |group, acks| async move { group.replicator.ask(Typed::ack(acks)).await },
        )
        .await?
        .into_iter();
    let results = parsed
        .iter()
        .zip(&fields)
        .enumerate()
        .map(|(index, (p, f))| {
            let outcome = match p {
                Ok(_) => outcomes.next().unwrap_or_default(),
                Err(why) => AckOutcome { refused: Some(Refused(why)), ..Default::default() },
            };
            json!({
                "index": index,
                "transactionId": f.map.get("transactionId"),
                "success": outcome.refused.is_none(),
                "error": outcome.refused,
                "dlq": outcome.dead_lettered,
                "leaseReleased": outcome.lease_released,
                "noop": outcome.noop,
            })
        })
        .collect();
    Ok(Json(Value::Array(results)))
}
