//! `GET /health` and `GET /metrics`.

use crate::node::Node;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// 200 while the node serves; 503 once a cluster node stopped: on an entry
/// apply refused (`raft.apply.failure` names it and the way out), or on a
/// log it could not write (a full volume; its log says so).
pub async fn health(State(node): State<Arc<Node>>) -> (StatusCode, Json<Value>) {
    let applied = node.view.local().applied;
    let raft = node.replicator.raft_status();
    let stopped = raft.as_ref().is_some_and(|r| r.role == "stopped");
    let code = if stopped { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    (
        code,
        Json(json!({
            "status": if stopped { "stopped" } else { "healthy" },
            "version": env!("CARGO_PKG_VERSION"),
            "replicator": node.replicator_name,
            "role": raft.as_ref().map_or("leader", |r| r.role),
            "applied": applied.index,
            "term": raft.as_ref().map_or(applied.term, |r| r.term),
            "raft": raft,
        })),
    )
}

pub async fn metrics(State(node): State<Arc<Node>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], node.metrics.render())
}
