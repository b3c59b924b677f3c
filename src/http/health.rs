//! `GET /health` and `GET /metrics`.

use crate::node::Node;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn health(State(node): State<Arc<Node>>) -> Json<Value> {
    let applied = node.view.local().applied;
    let raft = node.replicator.raft_status();
    Json(json!({
        "status": "healthy",
        "version": env!("CARGO_PKG_VERSION"),
        "replicator": node.replicator_name,
        "role": raft.as_ref().map_or("leader", |r| r.role),
        "applied": applied.index,
        "term": raft.as_ref().map_or(applied.term, |r| r.term),
        "raft": raft,
    }))
}

pub async fn metrics(State(node): State<Arc<Node>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], node.metrics.render())
}
