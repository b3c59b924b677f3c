//! One client connection: requests are read as they arrive (clients
//! pipeline them) and answered strictly in order, one at a time, as a Kafka
//! broker does. A connection with no request begun is closed after
//! `connections_max_idle` (Kafka's `connections.max.idle.ms`); a request
//! begun must arrive whole within `request_read_timeout`, so a client that
//! trickles bytes cannot hold the connection for ever.

use crate::sasl::Session;
use crate::{handlers, Broker, Facade};
use bytes::BytesMut;
use protocol::frame::split_frame;
use protocol::request::{self, DecodeError};
use protocol::response;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Serves one connection, plain TCP or TLS, until the client leaves or
/// breaks the protocol or a timeout.
pub async fn serve<B: Broker, S: AsyncRead + AsyncWrite + Unpin>(
    facade: Arc<Facade<B>>,
    mut stream: S,
    peer: SocketAddr,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut session = Session::default();
    // When the first byte of the request being read arrived.
    let mut begun: Option<Instant> = None;
    loop {
        let frame = match split_frame(&mut buf, facade.config.max_request_bytes) {
            Ok(Some(frame)) => {
                // Bytes already past this frame are the next one begun.
                begun = (!buf.is_empty()).then(Instant::now);
                frame
            }
            Ok(None) => {
                let wait = match begun {
                    None => facade.config.connections_max_idle,
                    Some(at) => facade.config.request_read_timeout.saturating_sub(at.elapsed()),
                };
                match tokio::time::timeout(wait, stream.read_buf(&mut buf)).await {
                    Ok(Ok(0)) => return,
                    Ok(Ok(_)) => {
                        begun.get_or_insert_with(Instant::now);
                        continue;
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "kafka connection: read failed");
                        return;
                    }
                    Err(_) if begun.is_none() => {
                        tracing::debug!(%peer, idle = ?wait, "kafka connection closed: idle");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(
                            %peer,
                            received = buf.len(),
                            timeout = ?facade.config.request_read_timeout,
                            "kafka connection closed: a request did not arrive whole in time"
                        );
                        return;
                    }
                }
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "kafka connection closed: bad frame");
                return;
            }
        };
        if session.expects_bare_token() {
            match handlers::bare_sasl_token(&facade, &frame, &mut session) {
                Ok(reply) => {
                    if let Err(e) = stream.write_all(&reply).await {
                        tracing::debug!(%peer, error = %e, "kafka connection: write failed");
                        return;
                    }
                    continue;
                }
                Err(why) => {
                    tracing::warn!(%peer, reason = %why, "kafka connection closed: SASL authentication failed");
                    return;
                }
            }
        }
        let answer = match request::decode(frame) {
            Ok(req) => {
                let (api_key, version, correlation_id) = (req.api_key, req.version, req.correlation_id());
                match handlers::handle(&facade, req, peer, &mut session).await {
                    handlers::Reply::Answer(body) => match response::encode(correlation_id, api_key, version, &body) {
                        Ok(bytes) => Some(bytes),
                        Err(e) => {
                            tracing::error!(%peer, error = %e, "kafka connection closed: answer does not encode");
                            return;
                        }
                    },
                    handlers::Reply::Silent => None,
                    handlers::Reply::Refuse(why) => {
                        tracing::warn!(%peer, reason = %why, "kafka connection closed: request refused");
                        return;
                    }
                    handlers::Reply::Unhandled(what) => {
                        tracing::error!(%peer, request = %what, "kafka connection closed: no handler");
                        return;
                    }
                }
            }
            Err(DecodeError::UnsupportedVersion {
                api_key: protocol::messages::ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => Some(response::unsupported_api_versions(correlation_id)),
            Err(e) => {
                // A request that cannot be decoded cannot be answered in its
                // own format; the client learns why from the log and from the
                // closed connection, as with a Kafka broker.
                tracing::warn!(%peer, error = %e, "kafka connection closed: request refused");
                return;
            }
        };
        if let Some(bytes) = answer {
            if let Err(e) = stream.write_all(&bytes).await {
                tracing::debug!(%peer, error = %e, "kafka connection: write failed");
                return;
            }
        }
    }
}
