//! The membership API (recovery.md): `GET /api/v1/system/raft/membership`;
//! `POST .../learners` `{id, raft, http, kafka?}`, `POST .../promote`
//! `{ids}`, `PUT .../voters` `{voters}`, `DELETE .../members/{id}`. A change
//! answers `{ok: true, membership}`, or 409 `{ok: false, code, error}` with
//! the code recovery.md names; any node takes it and the leader makes it.

use super::body::{json_object, Fields};
use super::error::ApiError;
use crate::node::Node;
use crate::replicate::raft::membership::{ChangeRefusal, MembershipChange};
use crate::store::rows::Member;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

fn not_a_cluster() -> ApiError {
    ApiError::bad_request(
        "not_a_cluster",
        "this node runs alone (no QUEEN_RAFT_NODE_ID and QUEEN_RAFT_PEERS): it has no raft membership",
    )
}

/// The membership, as group 0 holds it, and each raft group's own view:
/// its voters, its leader and, from its leader, each member's lag.
pub async fn show(State(node): State<Arc<Node>>) -> Result<Json<Value>, ApiError> {
    let view = node.group0().replicator.membership().ok_or_else(not_a_cluster)?.await;
    let mut groups = Vec::with_capacity(node.groups().len());
    for (g, group) in node.groups().iter().enumerate() {
        if let Some(asked) = group.replicator.membership() {
            groups.push(json!({ "group": g, "membership": asked.await }));
        }
    }
    Ok(Json(json!({ "membership": view, "groups": groups })))
}

/// Makes `change` in every raft group, group 0 first, each through its own
/// leader (which refuses what its own log does not allow: a learner still
/// copying that group's log is not promoted there). A group already as the
/// change would make it is skipped, so that a change refused part-way is
/// finished by asking again; the refusal names the group and the groups
/// already changed.
async fn change(node: &Node, change: MembershipChange) -> Result<Response, ApiError> {
    let several = node.groups().len() > 1;
    let mut made = Vec::new();
    // Group 0's view after its change: the answer.
    let mut view = None;
    for (g, group) in node.groups().iter().enumerate() {
        if several {
            // Skipped only on its leader's own view: a follower's may be
            // older than the change it would seem to show.
            let current = group.replicator.membership().ok_or_else(not_a_cluster)?.await;
            if current.source == "leader" && change.in_effect(&current) {
                continue;
            }
        }
        match group.replicator.change_membership(change.clone()).ok_or_else(not_a_cluster)?.await {
            Ok(changed) => {
                made.push(g);
                if g == 0 {
                    view = Some(changed);
                }
            }
            Err(ChangeRefusal { code, message }) => {
                let status = match code.as_str() {
                    "failed" | "not_a_member" => StatusCode::SERVICE_UNAVAILABLE,
                    "unsupported" => StatusCode::NOT_IMPLEMENTED,
                    _ => StatusCode::CONFLICT,
                };
                let error = match several {
                    false => message,
                    true => format!(
                        "raft group {g}: {message} (groups changed by this call: {made:?}; ask again to finish)"
                    ),
                };
                return Ok(
                    (status, Json(json!({ "ok": false, "code": code, "error": error, "group": g }))).into_response()
                );
            }
        }
    }
    // Removing a node no group has is refused, as one group refuses it.
    if let (true, MembershipChange::Remove { id }) = (made.is_empty(), &change) {
        let refused = json!({ "ok": false, "code": "not_member", "error": format!("node {id} is not a member") });
        return Ok((StatusCode::CONFLICT, Json(refused)).into_response());
    }
    let view = match view {
        Some(view) => view,
        None => node.group0().replicator.membership().ok_or_else(not_a_cluster)?.await,
    };
    Ok(Json(json!({ "ok": true, "membership": view })).into_response())
}

fn ids(f: &Fields<'_>, field: &str) -> Result<Vec<u64>, ApiError> {
    f.array(field)?
        .iter()
        .map(|v| v.as_u64().filter(|id| *id > 0).ok_or_else(|| f.mistyped(field, "an array of node ids above 0")))
        .collect()
}

pub async fn add_learner(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let map = json_object(body)?;
    let f = Fields::new(&map, "body");
    let id = f.opt_u64("id")?.filter(|id| *id > 0).ok_or_else(|| f.missing("id"))?;
    let raft = f.opt_str("raft")?.filter(|s| !s.is_empty()).ok_or_else(|| f.missing("raft"))?;
    let member = Member {
        raft: raft.to_string(),
        http: f.opt_str("http")?.unwrap_or_default().to_string(),
        kafka: f.opt_str("kafka")?.unwrap_or_default().to_string(),
    };
    change(&node, MembershipChange::AddLearner { id, member }).await
}

pub async fn promote(State(node): State<Arc<Node>>, body: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    let map = json_object(body)?;
    let ids = ids(&Fields::new(&map, "body"), "ids")?;
    change(&node, MembershipChange::Promote { ids }).await
}

pub async fn set_voters(
    State(node): State<Arc<Node>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let map = json_object(body)?;
    let voters = ids(&Fields::new(&map, "body"), "voters")?;
    change(&node, MembershipChange::SetVoters { voters }).await
}

pub async fn remove(State(node): State<Arc<Node>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let id = id
        .parse::<u64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| ApiError::bad_request("bad_node_id", format!("{id:?} is not a node id")))?;
    change(&node, MembershipChange::Remove { id }).await
}
