//! The native HTTP API (axum), in the shapes the queen-mq 2.6.0 client speaks.

pub(crate) mod ack;
pub(crate) mod ack_places;
pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod changed;
pub(crate) mod dashboard;
pub(crate) mod dlq;
pub(crate) mod ephemeral;
pub(crate) mod error;
pub(crate) mod fetch;
pub(crate) mod groups;
pub(crate) mod health;
pub(crate) mod ids;
pub(crate) mod kv;
pub(crate) mod lease;
pub mod listener;
pub(crate) mod locks;
pub(crate) mod membership;
pub(crate) mod messages;
pub(crate) mod names;
pub(crate) mod pop;
pub(crate) mod pop_frames;
pub(crate) mod push;
pub(crate) mod push_binary;
pub(crate) mod queues;
pub(crate) mod resources;
pub(crate) mod share_view;
pub(crate) mod status;
pub(crate) mod storage_gate;
pub(crate) mod streams;
pub(crate) mod timers;
pub(crate) mod traces;
pub(crate) mod transaction;

use crate::node::Node;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, Uri};
use axum::routing::{delete, get, post, put};
use axum::Router;
use error::ApiError;
use std::sync::Arc;

pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route("/api/v1/push", post(push::push))
        .route("/api/v1/fetch", post(fetch::fetch))
        .route("/api/v1/partitions/changed", post(changed::changed))
        .route("/api/v1/configure", post(queues::configure))
        .route("/api/v1/resources/queues/{queue}", get(resources::queue).delete(queues::delete))
        .route("/api/v1/resources/overview", get(resources::overview))
        .route("/api/v1/resources/namespaces", get(resources::namespaces))
        .route("/api/v1/resources/tasks", get(resources::tasks))
        .route("/api/v1/resources/queues", get(resources::queues))
        .route("/api/v1/resources/queues/{queue}/depth", get(resources::depth))
        .route("/api/v1/resources/partitions", get(resources::partitions))
        .route("/api/v1/pop", get(pop::pop_filtered))
        .route("/api/v1/pop/queue/{queue}", get(pop::pop_queue))
        .route("/api/v1/pop/queue/{queue}/partition/{partition}", get(pop::pop_partition))
        .route("/api/v1/ack", post(ack::ack))
        .route("/api/v1/ack/batch", post(ack::ack_batch))
        .route("/api/v1/lease/{lease}/extend", post(lease::extend))
        .route("/api/v1/dlq", get(dlq::list))
        .route("/api/v1/consumer-groups", get(groups::list))
        .route("/api/v1/consumer-groups/lagging", get(groups::lagging))
        .route("/api/v1/consumer-groups/{group}", get(groups::describe).delete(groups::delete))
        .route("/api/v1/consumer-groups/{group}/queues/{queue}", delete(groups::delete_for_queue))
        .route("/api/v1/consumer-groups/{group}/queues/{queue}/seek", post(groups::seek))
        .route("/api/v1/consumer-groups/{group}/subscription", post(groups::resubscribe))
        .route("/api/v1/stats/refresh", post(groups::refresh_stats))
        .route("/api/v1/kv", post(kv::batch))
        .route("/api/v1/transaction", post(transaction::commit))
        .route("/api/v1/locks", post(locks::batch))
        .route("/api/v1/ephemeral/configure", post(ephemeral::configure))
        .route("/api/v1/ephemeral/reset", post(ephemeral::reset))
        .route("/api/v1/ephemeral/queue/{queue}", delete(ephemeral::delete))
        .route("/api/v1/ephemeral/push", post(ephemeral::push))
        .route("/api/v1/ephemeral/pop", get(ephemeral::pop))
        .route("/api/v1/ephemeral/ack", post(ephemeral::ack))
        .route("/api/v1/ephemeral/queues", get(ephemeral::list))
        .route("/api/v1/ephemeral/queues/{queue}/depth", get(ephemeral::depth))
        .route("/api/v1/timers", post(timers::batch))
        .route("/api/v1/timers/{queue}", get(timers::list))
        .route("/api/v1/timers/{queue}/{*key}", get(timers::peek).delete(timers::cancel))
        .route("/api/v1/kv/{ns}/{*key}", get(kv::get).put(kv::put).delete(kv::delete))
        .route("/api/v1/messages", get(messages::list))
        .route("/api/v1/messages/{partition}/{transaction}", get(messages::get).delete(messages::delete))
        .route("/api/v1/messages/{partition}/{transaction}/retry", post(messages::retry))
        .route("/api/v1/status", get(status::status))
        .route("/api/v1/status/queues", get(status::queues))
        .route("/api/v1/status/queues/{queue}", get(status::queue))
        .route("/api/v1/status/analytics", get(status::analytics))
        .route("/api/v1/analytics/system-metrics", get(status::system_metrics))
        .route("/api/v1/analytics/worker-metrics", get(status::worker_metrics))
        .route("/api/v1/traces", post(traces::record))
        .route("/api/v1/traces/names", get(traces::names))
        .route("/api/v1/traces/by-name/{name}", get(traces::by_name))
        .route("/api/v1/traces/{partition}/{transaction}", get(traces::for_message))
        .route("/api/v1/system/raft/membership", get(membership::show))
        .route("/api/v1/system/raft/membership/learners", post(membership::add_learner))
        .route("/api/v1/system/raft/membership/promote", post(membership::promote))
        .route("/api/v1/system/raft/membership/voters", put(membership::set_voters))
        .route("/api/v1/system/raft/membership/members/{id}", delete(membership::remove))
        .route("/streams/v1/queries", post(streams::register))
        .route("/streams/v1/cycle", post(streams::cycle))
        .route("/streams/v1/state/get", post(streams::state_get))
        .route("/health", get(health::health))
        .route("/metrics", get(health::metrics))
        .route("/api/v1/dashboard/history", get(dashboard::history))
        .fallback(unknown_route)
        .layer(axum::middleware::from_fn_with_state(node.clone(), storage_gate::guard))
        .layer(axum::middleware::from_fn_with_state(node.clone(), auth::authenticate))
        .layer(DefaultBodyLimit::max(node.settings.max_body_bytes))
        .merge(dashboard::assets(&node))
        .with_state(node)
}

async fn unknown_route(uri: Uri) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "unknown_route", format!("no route {}", uri.path()))
}
