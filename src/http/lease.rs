//! `POST /api/v1/lease/{leaseId}/extend`: renews every live claim of a lease
//! by its queue's lease time. Answers 200 whether or not anything was
//! renewed; `success: false` means the lease is gone.

use super::error::ApiError;
use super::ids::iso_time;
use crate::node::Node;
use crate::replicate::typed::{Extended, Typed};
use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn extend(State(node): State<Arc<Node>>, Path(lease_id): Path<String>) -> Result<Json<Value>, ApiError> {
    // A lease is its pop's group's, which its id names.
    let group = node.group_of_derived(&lease_id);
    let Extended { renewed, expires_us } = group.replicator.ask(Typed::extend_lease(lease_id.clone())).await?;
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
