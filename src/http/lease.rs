//! `POST /api/v1/lease/{leaseId}/extend`: renews every live claim of a lease
//! by its queue's lease time. Answers 200 whether or not anything was
//! renewed; `success: false` means the lease is gone.

use super::error::ApiError;
use super::ids::iso_time;
use crate::node::Node;
use crate::planner::command::{Answer, Command};
use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn extend(State(node): State<Arc<Node>>, Path(lease_id): Path<String>) -> Result<Json<Value>, ApiError> {
    let Answer::Extended { renewed, expires_us } =
        node.replicator.propose(Command::ExtendLease { lease_id: lease_id.clone() }).await?
    else {
        return Err(ApiError::mismatched_answer());
    };
    let expires = expires_us.map(iso_time);
    let mut answer = json!({
        "leaseId": lease_id,
        "success": renewed > 0,
        "renewed": renewed,
        "newExpiresAt": expires,
        "expiresAt": expires,
    });
    if renewed == 0 {
        answer["error"] = json!("lease_expired_or_not_held");
    }
    Ok(Json(answer))
}
