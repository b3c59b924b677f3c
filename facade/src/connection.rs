//! One client connection: requests are read as they arrive (clients
//! pipeline them) and answered strictly in order, one at a time, as a Kafka
//! broker does.

use crate::sasl::Session;
use crate::{handlers, Broker, Facade};
use bytes::BytesMut;
use protocol::frame::split_frame;
use protocol::request::{self, DecodeError};
use protocol::response;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn serve<B: Broker>(facade: Arc<Facade<B>>, mut stream: TcpStream, peer: SocketAddr) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut session = Session::default();
    loop {
        let frame = match split_frame(&mut buf, facade.config.max_request_bytes) {
            Ok(Some(frame)) => frame,
            Ok(None) => match stream.read_buf(&mut buf).await {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "kafka connection: read failed");
                    return;
                }
            },
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
