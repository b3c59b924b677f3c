//! The disk gate on the HTTP API's side: which requests grow storage, and
//! the middleware that refuses them with `507 storage_full` while the gate
//! (`disk_gate.rs`) is closed.

use super::error::ApiError;
use crate::node::Node;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// Whether a request grows storage whatever its body says. KV and lock
/// calls are judged by their handlers, which know which operations write.
fn grows_storage(method: &Method, path: &str) -> bool {
    (*method == Method::POST
        && [
            "/api/v1/push",
            "/api/v1/transaction",
            "/api/v1/configure",
            "/api/v1/timers",
            "/api/v1/traces",
            "/streams/v1/queries",
            "/streams/v1/cycle",
        ]
        .contains(&path))
        || (*method == Method::PUT && path.starts_with("/api/v1/kv/"))
}

/// Middleware: refuses what grows storage while the gate is closed, and
/// counts an admitted request's body (its `Content-Length`) as on its way to
/// the disk until the request has answered.
pub async fn guard(State(node): State<Arc<Node>>, request: Request, next: Next) -> Response {
    if !grows_storage(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let bytes = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    let Some(admission) = node.disk_gate.admit(bytes) else {
        return ApiError::storage_full().before_the_body();
    };
    let answer = next.run(request).await;
    drop(admission);
    answer
}
