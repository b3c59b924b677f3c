//! Accepting Kafka connections within the connection limit, over TLS when
//! the listener has an acceptor (Kafka's `SSL` and `SASL_SSL`).

use crate::accept::Acceptor;
use crate::tls::TlsAcceptor;
use crate::{connection, Broker, Facade};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves Kafka clients on `listener` until the process ends.
pub async fn serve<B: Broker>(listener: TcpListener, facade: Arc<Facade<B>>, tls: Option<TlsAcceptor>) {
    let mut acceptor = Acceptor::new(listener, "kafka", facade.config.max_connections);
    loop {
        let accepted = acceptor.next().await;
        let _ = accepted.stream.set_nodelay(true);
        let (facade, tls, peer) = (facade.clone(), tls.clone(), accepted.peer);
        tokio::spawn(async move {
            let _slot = accepted.slot;
            let Some(tls) = tls else {
                return connection::serve(facade, accepted.stream, peer).await;
            };
            // A handshake is bounded like a request's frame: a client that
            // starts one and stalls does not hold the connection.
            match tokio::time::timeout(facade.config.request_read_timeout, tls.accept(accepted.stream)).await {
                Ok(Ok(stream)) => connection::serve(facade, stream, peer).await,
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "kafka connection closed: TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "kafka connection closed: TLS handshake not done in time"),
            }
        });
    }
}
