//! Serving the HTTP API: an accept loop of our own (the connection cap, the
//! back-off when out of file descriptors, TLS) around hyper's HTTP/1.1
//! connection with a header read timeout, neither of which `axum::serve`
//! gives: without them a client trickling a header a byte at a time held a
//! connection for ever, and connections had no bound.

use super::router;
use crate::node::Node;
use facade::accept::Acceptor;
use facade::tls::TlsAcceptor;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serves until SIGTERM or SIGINT, then lets requests in flight finish.
pub async fn serve(node: Arc<Node>, tls: Option<TlsAcceptor>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(node.settings.http_addr).await?;
    tracing::info!(addr = %listener.local_addr()?, tls = tls.is_some(), "HTTP API listening");
    let header_timeout = Duration::from_millis(node.settings.http_header_read_timeout_ms);
    let mut acceptor = Acceptor::new(listener, "http", node.settings.http_max_connections as usize);
    let app = router(node);
    let graceful = GracefulShutdown::new();
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = acceptor.next() => accepted,
            _ = &mut shutdown => break,
        };
        let (app, tls, watcher, peer) = (app.clone(), tls.clone(), graceful.watcher(), accepted.peer);
        tokio::spawn(async move {
            let _slot = accepted.slot;
            let Some(tls) = tls else {
                return serve_connection(accepted.stream, app, header_timeout, watcher).await;
            };
            match tokio::time::timeout(header_timeout, tls.accept(accepted.stream)).await {
                Ok(Ok(stream)) => serve_connection(stream, app, header_timeout, watcher).await,
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "http connection closed: TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "http connection closed: TLS handshake not done in time"),
            }
        });
    }
    graceful.shutdown().await;
    Ok(())
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    app: axum::Router,
    header_timeout: Duration,
    watcher: hyper_util::server::graceful::Watcher,
) {
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    if let Err(e) = watcher.watch(connection).await {
        tracing::debug!(error = %e, "http connection closed");
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install the SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutting down: draining requests in flight");
}
