//! A node's process: boots the node from its settings, binds the Kafka and
//! HTTP listeners, starts the due work (timers, KV expiry, Kafka
//! transaction timeouts, retention, idle ephemeral queues) and serves until
//! it is stopped. Anything that keeps it from starting ends it with a FATAL
//! line naming the cause.

use crate::config::Settings;
use crate::node::Node;
use crate::{due_work, fatal, http, kafka, retention_scan, tls};
use std::sync::Arc;

/// Runs the node `settings` describe, logging to stderr, until it stops.
pub fn serve(settings: Settings) {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&settings.log).unwrap_or_else(|_| "info".into()))
        .init();
    let tls = tls::listeners(&settings).unwrap_or_else(|e| fatal::exit(&e));
    let node = match Node::boot(settings) {
        Ok(node) => Arc::new(node),
        Err(e) => fatal::exit(&e.to_string()),
    };
    let runtime = tokio::runtime::Runtime::new().expect("start the tokio runtime");
    let served = runtime.block_on(async {
        let listener = match kafka::bind(&node).await {
            Ok(listener) => listener,
            Err(e) => fatal::exit(&format!("Kafka listener on {}: {e}", node.settings.kafka_addr)),
        };
        let bound = listener.local_addr().unwrap_or(node.settings.kafka_addr);
        let kafka_config = kafka::config(&node.settings, bound, node.auth.clone()).unwrap_or_else(|e| fatal::exit(&e));
        tokio::spawn(kafka::serve(node.clone(), listener, kafka_config, tls.kafka));
        tokio::spawn(due_work::fire_timers(node.clone()));
        tokio::spawn(due_work::sweep_kv(node.clone()));
        tokio::spawn(due_work::expire_kafka_txns(node.clone()));
        tokio::spawn(due_work::expire_producers(node.clone()));
        tokio::spawn(retention_scan::run(node.clone()));
        tokio::spawn(due_work::collect_idle_ephemeral(node.clone()));
        http::listener::serve(node.clone(), tls.http).await
    });
    if let Err(e) = served {
        fatal::exit(&format!("HTTP listener on {}: {e}", node.settings.http_addr));
    }
    node.stop();
    tracing::info!("stopped");
}
