//! `GET /health` and `GET /metrics`.

use crate::metrics::GroupState;
use crate::node::Node;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// 200 while the node serves; 503 once a cluster node stopped: on an entry
/// apply refused (`raft.apply.failure` names it and the way out), or on a
/// log it could not write (a full volume; its log says so); 503 while a
/// node started with QUEEN_RAFT_JOIN waits to be added (recovery.md: it is
/// NotReady until then), and while a node removed from the membership runs
/// on (`standing.rs`). The top-level fields are group 0's; in a cluster,
/// `groups` gives every raft group's own (`QUEEN_RAFT_GROUPS`), and a
/// group stopped stops the node.
pub async fn health(State(node): State<Arc<Node>>) -> (StatusCode, Json<Value>) {
    let applied = node.group0().view.local().applied;
    let groups: Vec<_> = node.groups().iter().filter_map(|g| g.replicator.raft_status()).collect();
    let raft = groups.first();
    let status = match raft {
        _ if groups.iter().any(|g| g.role == "stopped") => "stopped",
        Some(r) if r.joining => "joining",
        _ if groups.iter().any(|g| g.removed) => "removed",
        _ => "healthy",
    };
    let groups: Vec<Value> = groups
        .iter()
        .enumerate()
        .map(|(g, status)| json!({ "group": g, "role": status.role, "term": status.term, "leader": status.leader, "applied": status.applied, "commit": status.commit, "voters": status.voters }))
        .collect();
    let code = if status == "healthy" { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (
        code,
        Json(json!({
            "status": status,
            "version": env!("CARGO_PKG_VERSION"),
            "replicator": node.replicator_name,
            "role": raft.map_or("leader", |r| r.role),
            "applied": applied.index,
            "term": raft.map_or(applied.term, |r| r.term),
            "raft": raft,
            "groups": (!groups.is_empty()).then_some(groups),
        })),
    )
}

/// The node's metrics; in a cluster, each raft group's state too, read
/// from its raft status now; and each group's store rows by keyspace, its
/// store read-locked for the count.
pub async fn metrics(State(node): State<Arc<Node>>) -> impl IntoResponse {
    for (g, group) in node.groups().iter().enumerate() {
        let rows = group.view.local().row_counts();
        node.metrics.record_store_rows(g, &rows);
        if let Some(s) = group.replicator.raft_status() {
            let state = GroupState { applied: s.applied, commit: s.commit, term: s.term, leader: s.leader };
            node.metrics.record_group(g, &state);
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], node.metrics.render())
}
