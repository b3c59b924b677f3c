//! Accepting connections, within the connection limit.

use crate::{connection, Broker, Facade};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves Kafka clients on `listener` until the process ends.
pub async fn serve<B: Broker>(listener: TcpListener, facade: Arc<Facade<B>>) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "kafka listener: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if open.fetch_add(1, Ordering::SeqCst) >= facade.config.max_connections {
            open.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(%peer, limit = facade.config.max_connections, "kafka connection refused: too many open");
            continue;
        }
        let _ = stream.set_nodelay(true);
        let facade = facade.clone();
        let open = open.clone();
        tokio::spawn(async move {
            connection::serve(facade, stream, peer).await;
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}
