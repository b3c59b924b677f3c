use clap::Parser;
use queen::config::Settings;
use queen::node::Node;
use std::sync::Arc;

fn main() {
    // `queen cluster ...` starts a local cluster of child processes.
    if std::env::args().nth(1).as_deref() == Some("cluster") {
        let args = queen::local_cluster::ClusterArgs::parse_from(std::env::args().skip(1));
        std::process::exit(queen::local_cluster::run(args));
    }
    let settings = Settings::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&settings.log).unwrap_or_else(|_| "info".into()))
        .init();
    let tls = queen::tls::listeners(&settings).unwrap_or_else(|e| queen::fatal::exit(&e));
    let node = match Node::boot(settings) {
        Ok(node) => Arc::new(node),
        Err(e) => queen::fatal::exit(&e.to_string()),
    };
    let runtime = tokio::runtime::Runtime::new().expect("start the tokio runtime");
    let served = runtime.block_on(async {
        let kafka = match queen::kafka::bind(&node).await {
            Ok(listener) => listener,
            Err(e) => queen::fatal::exit(&format!("Kafka listener on {}: {e}", node.settings.kafka_addr)),
        };
        let bound = kafka.local_addr().unwrap_or(node.settings.kafka_addr);
        let kafka_config =
            queen::kafka::config(&node.settings, bound, node.auth.clone()).unwrap_or_else(|e| queen::fatal::exit(&e));
        tokio::spawn(queen::kafka::serve(node.clone(), kafka, kafka_config, tls.kafka));
        tokio::spawn(queen::due_work::fire_timers(node.clone()));
        tokio::spawn(queen::due_work::sweep_kv(node.clone()));
        tokio::spawn(queen::due_work::expire_kafka_txns(node.clone()));
        tokio::spawn(queen::retention_scan::run(node.clone()));
        tokio::spawn(queen::due_work::collect_idle_ephemeral(node.clone()));
        queen::http::listener::serve(node.clone(), tls.http).await
    });
    if let Err(e) = served {
        queen::fatal::exit(&format!("HTTP listener on {}: {e}", node.settings.http_addr));
    }
    node.replicator.stop();
    tracing::info!("stopped");
}
