//! The Kafka front end: the `facade` crate's listener, served over this
//! node through [`broker::QueenBroker`], which turns each Kafka operation
//! into the planner commands the HTTP API uses.

pub mod broker;
pub mod records;

use crate::node::Node;
use facade::{Facade, FacadeConfig};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Binds the Kafka listener; the caller turns a failure into a FATAL line.
pub async fn bind(node: &Node) -> std::io::Result<TcpListener> {
    TcpListener::bind(node.settings.kafka_addr).await
}

/// Serves Kafka clients on `listener` for the life of the process.
pub async fn serve(node: Arc<Node>, listener: TcpListener) {
    let config = facade_config(&node, &listener);
    tracing::info!(addr = %node.settings.kafka_addr, advertised = %format!("{}:{}", config.advertised_host, config.advertised_port), "kafka listener ready");
    let facade = Facade::new(Arc::new(broker::QueenBroker::new(node)), config);
    facade::serve(listener, facade).await;
}

fn facade_config(node: &Node, listener: &TcpListener) -> FacadeConfig {
    let s = &node.settings;
    let bound = listener.local_addr().unwrap_or(s.kafka_addr);
    let (host, port) = match s.kafka_advertised.as_deref().and_then(|a| a.rsplit_once(':')) {
        Some((host, port)) => (host.to_string(), port.parse().unwrap_or(bound.port() as i32)),
        None if bound.ip().is_unspecified() => ("127.0.0.1".to_string(), bound.port() as i32),
        None => (bound.ip().to_string(), bound.port() as i32),
    };
    FacadeConfig {
        node_id: 1,
        advertised_host: host,
        advertised_port: port,
        cluster_id: "queen".to_string(),
        max_request_bytes: s.kafka_max_request_bytes,
        max_connections: s.kafka_max_connections,
        auto_create_topics: s.kafka_auto_create_topics,
        num_partitions: s.kafka_num_partitions,
        initial_rebalance_delay: Duration::from_millis(s.kafka_initial_rebalance_delay_ms),
    }
}
