//! `GET /health` and `GET /metrics`.

use crate::node::{Node, REPLICATOR_NAME};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn health(State(node): State<Arc<Node>>) -> Json<Value> {
    let applied = node.view.local().applied;
    Json(json!({
        "status": "healthy",
        "version": env!("CARGO_PKG_VERSION"),
        "replicator": REPLICATOR_NAME,
        "role": "leader",
        "applied": applied.index,
        "term": applied.term,
    }))
}

pub async fn metrics(State(node): State<Arc<Node>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], node.metrics.render())
}
