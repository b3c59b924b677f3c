//! One client connection: requests are read as they arrive (clients
//! pipeline them) and answered strictly in order, as a Kafka broker does.
//! A produce is handled as far as its write's place in the log and then
//! waits for durability beside the next requests: up to `PIPELINED`
//! produce requests are in flight at once, and any other request waits
//! until every produce before it is answered, so it sees their writes.
//! A connection with no request begun is closed after
//! `connections_max_idle` (Kafka's `connections.max.idle.ms`); a request
//! begun must arrive whole within `request_read_timeout`, so a client that
//! trickles bytes cannot hold the connection for ever.

use crate::file_range::FileBytesSent;
use crate::handlers::Reply;
use crate::sasl::Session;
use crate::share_sessions::ConnectionId;
use crate::spliced::{self, Part};
use crate::{handlers, Broker, Facade};
use bytes::{Buf, Bytes, BytesMut};
use protocol::frame::split_frame;
use protocol::messages::ApiKey;
use protocol::request::{self, DecodeError};
use protocol::response;
use std::collections::VecDeque;
use std::future::Future;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connection's stream: plain TCP, to which the kernel sends a fetch's
/// stored batches from their files, or TLS, which encrypts them here.
pub trait Socket: AsyncRead + AsyncWrite + Unpin + Send {
    fn plain(&self) -> Option<&TcpStream>;
}

impl Socket for TcpStream {
    fn plain(&self) -> Option<&TcpStream> {
        Some(self)
    }
}

impl Socket for tokio_rustls::server::TlsStream<TcpStream> {
    fn plain(&self) -> Option<&TcpStream> {
        None
    }
}

/// Numbers this process's connections, so a share session can name the
/// one that opened it.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// Serves one connection, plain TCP or TLS, until the client leaves or
/// breaks the protocol or a timeout; then ends the share sessions it
/// opened.
pub async fn serve<B: Broker, S: Socket>(facade: Arc<Facade<B>>, stream: S, peer: SocketAddr) {
    let connection = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
    serve_requests(facade.clone(), stream, peer, connection).await;
    end_share_sessions(&facade, connection).await;
}

/// Gives back at once the records held by the members whose share sessions
/// `connection` opened, as Kafka releases a member's acquired records when
/// its session's connection drops, rather than leaving them to their locks.
async fn end_share_sessions<B: Broker>(facade: &Facade<B>, connection: ConnectionId) {
    for (group, member) in facade.share_sessions.close_connection(connection) {
        if let Err(e) = facade.broker.share_release(group.clone(), member.clone()).await {
            tracing::warn!(group, member, error = %e, "kafka connection closed: its share session's records wait for their locks to run out");
        }
    }
}

async fn serve_requests<B: Broker, S: Socket>(
    facade: Arc<Facade<B>>,
    mut stream: S,
    peer: SocketAddr,
    connection: ConnectionId,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut session = Session::default();
    // When the first byte of the request being read arrived.
    let mut begun: Option<Instant> = None;
    // Handled requests not yet answered, oldest first.
    let mut pending: VecDeque<Answering> = VecDeque::new();
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
                let read = tokio::select! {
                    // A produce made durable meanwhile is answered first.
                    reply = oldest_ready(&mut pending) => {
                        let Some(oldest) = pending.pop_front() else { continue };
                        if !write_reply(&mut stream, reply, oldest.header, peer, &facade.config.file_bytes_sent).await {
                            return;
                        }
                        continue;
                    }
                    read = tokio::time::timeout(wait, stream.read_buf(&mut buf)) => read,
                };
                match read {
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
            if !answer_until(&mut stream, &mut pending, 0, peer, &facade.config.file_bytes_sent).await {
                return;
            }
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
        let (reply, correlation_id, api_key, version) = match request::decode(frame) {
            Ok(req) => {
                let (api_key, version, correlation_id) = (req.api_key, req.version, req.correlation_id());
                let produce = matches!(req.body, protocol::messages::RequestKind::Produce(_));
                let keep = if produce { PIPELINED - 1 } else { 0 };
                if !answer_until(&mut stream, &mut pending, keep, peer, &facade.config.file_bytes_sent).await {
                    return;
                }
                (handlers::handle(&facade, req, peer, connection, &mut session).await, correlation_id, api_key, version)
            }
            Err(DecodeError::UnsupportedVersion {
                api_key: protocol::messages::ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => {
                if !answer_until(&mut stream, &mut pending, 0, peer, &facade.config.file_bytes_sent).await {
                    return;
                }
                if let Err(e) = stream.write_all(&response::unsupported_api_versions(correlation_id)).await {
                    tracing::debug!(%peer, error = %e, "kafka connection: write failed");
                    return;
                }
                continue;
            }
            Err(e) => {
                // A request that cannot be decoded cannot be answered in its
                // own format; the client learns why from the log and from the
                // closed connection, as with a Kafka broker.
                tracing::warn!(%peer, error = %e, "kafka connection closed: request refused");
                return;
            }
        };
        // An answer ready now is written now, after those before it.
        let ready = !matches!(reply, Reply::Pending(_));
        let reply: Pin<Box<dyn Future<Output = Reply> + Send>> = match reply {
            Reply::Pending(later) => later,
            now => Box::pin(std::future::ready(now)),
        };
        pending.push_back(Answering { reply, header: Header { correlation_id, api_key, version } });
        if ready && !answer_until(&mut stream, &mut pending, 0, peer, &facade.config.file_bytes_sent).await {
            return;
        }
    }
}

/// The most produce requests of one connection between their handling and
/// their answer. librdkafka sends up to five (with idempotence) or as many
/// as its batches allow; past this the connection reads no further until
/// the oldest is answered.
const PIPELINED: usize = 16;

/// A handled request whose answer is not written yet.
struct Answering {
    reply: Pin<Box<dyn Future<Output = Reply> + Send>>,
    header: Header,
}

/// What the answer's encoding takes from its request.
#[derive(Clone, Copy)]
struct Header {
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
}

/// The oldest unanswered request's reply, once it is ready; never while
/// none is waiting. Only the oldest is polled: the others' writes proceed
/// without it, and their answers are written after it anyway.
async fn oldest_ready(pending: &mut VecDeque<Answering>) -> Reply {
    match pending.front_mut() {
        Some(oldest) => oldest.reply.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Answers the oldest requests, in order, until at most `keep` wait; false
/// when the connection is to close (a reply refuses, or a write fails).
async fn answer_until<S: Socket>(
    stream: &mut S,
    pending: &mut VecDeque<Answering>,
    keep: usize,
    peer: SocketAddr,
    counted: &FileBytesSent,
) -> bool {
    while pending.len() > keep {
        let Some(mut oldest) = pending.pop_front() else { break };
        let reply = oldest.reply.as_mut().await;
        if !write_reply(stream, reply, oldest.header, peer, counted).await {
            return false;
        }
    }
    true
}

/// Writes a request's reply, if it has one; false when the connection is to
/// close.
async fn write_reply<S: Socket>(
    stream: &mut S,
    reply: Reply,
    header: Header,
    peer: SocketAddr,
    counted: &FileBytesSent,
) -> bool {
    let (body, splices) = match reply {
        Reply::Answer(body) => (body, Vec::new()),
        Reply::Spliced(body, splices) => (body, splices),
        Reply::Silent => return true,
        Reply::Pending(_) => {
            tracing::error!(%peer, "kafka connection closed: a pending reply answered another pending reply");
            return false;
        }
        Reply::Refuse(why) => {
            tracing::warn!(%peer, reason = %why, "kafka connection closed: request refused");
            return false;
        }
        Reply::Unhandled(what) => {
            tracing::error!(%peer, request = %what, "kafka connection closed: no handler");
            return false;
        }
    };
    let chunks = match response::encode_chunks(header.correlation_id, header.api_key, header.version, &body) {
        Ok(chunks) => chunks,
        Err(e) => {
            tracing::error!(%peer, error = %e, "kafka connection closed: answer does not encode");
            return false;
        }
    };
    let parts = match spliced::splice(chunks, splices) {
        Ok(parts) => parts,
        Err(why) => {
            tracing::error!(%peer, reason = %why, "kafka connection closed: a fetch answer lost a record set");
            return false;
        }
    };
    if let Err(e) = write_parts(stream, parts, counted).await {
        tracing::debug!(%peer, error = %e, "kafka connection: write failed");
        return false;
    }
    true
}

/// Writes an answer's parts in order: bytes as vectored writes, a stored
/// file's range by `sendfile` on plain TCP, read and written on TLS. The
/// read is a positioned read of bytes a produce wrote moments or minutes
/// ago, from the page cache as a rule, so it stays on this task.
async fn write_parts<S: Socket>(stream: &mut S, parts: Vec<Part>, counted: &FileBytesSent) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Bytes(b) => bytes.push(b),
            Part::File(range) if range.sendable() && stream.plain().is_some() => {
                write_chunks(stream, std::mem::take(&mut bytes)).await?;
                let socket = stream.plain().expect("a plain stream stays plain");
                range.send(socket, counted).await?;
            }
            Part::File(range) => bytes.push(range.read(counted)?),
        }
    }
    write_chunks(stream, bytes).await
}

/// Writes every chunk, in order, as few writes as the stream takes them in.
async fn write_chunks<S: Socket>(stream: &mut S, chunks: Vec<Bytes>) -> std::io::Result<()> {
    let mut chunks = VecDeque::from(chunks);
    while !chunks.is_empty() {
        let slices: Vec<IoSlice<'_>> = chunks.iter().map(|c| IoSlice::new(c)).collect();
        let mut written = stream.write_vectored(&slices).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while let Some(first) = chunks.front_mut() {
            if written < first.len() {
                first.advance(written);
                break;
            }
            written -= first.len();
            chunks.pop_front();
        }
    }
    Ok(())
}
