//! `POST /api/v1/configure` and `DELETE /api/v1/resources/queues/{queue}`.

use super::body::{json_object, Fields};
use super::error::ApiError;
use crate::node::Node;
use crate::planner::command::ConfigureQueue;
use crate::queue_options::{self, QueueOptions};
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn configure(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = json_object(body)?;
    let f = Fields::new(&body, "");
    let queue = f.name_str("queue")?.to_string();
    if !super::names::is_valid(&queue) {
        return Err(f.mistyped("queue", super::names::RULE));
    }
    let options = match body.get("options") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(f.mistyped("options", "an object")),
    };
    let sealed = QueueOptions::parse(&Value::Object(queue_options::merge(Default::default(), &options)).to_string())
        .encryption_enabled();
    if sealed && node.cipher.is_none() {
        return Err(ApiError::bad_request(
            "encryption_unavailable",
            "encryptionEnabled needs QUEEN_ENCRYPTION_KEY set on the node (64 hex characters)",
        ));
    }
    let namespace = f.opt_str("namespace")?.map(str::to_string);
    let task = f.opt_str("task")?.map(str::to_string);
    let cmd = ConfigureQueue { queue: queue.clone(), namespace: namespace.clone(), task: task.clone(), options };
    let options = node.group_of(&queue).replicator.ask(Typed::configure(cmd)).await?;
    Ok(Json(json!({"queue": queue, "namespace": namespace, "task": task, "configured": true, "options": options})))
}

pub async fn delete(State(node): State<Arc<Node>>, Path(queue): Path<String>) -> Result<Json<Value>, ApiError> {
    let existed = node.group_of(&queue).replicator.ask(Typed::delete_queue(queue.clone())).await?;
    Ok(Json(json!({"queue": queue, "deleted": existed})))
}
