//! One node's connection to a peer's raft port, shared by every call to
//! that peer: opened on first use (and again after it breaks), introduced by
//! the cluster token, and multiplexed, each request answered by its id.

use super::rpc::{read_frame, write_frame, Hello, Request, Response, Welcome};
use super::transport::{Stream, Transport};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::WriteHalf;
use tokio::sync::oneshot;

#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    #[error("raft peer {addr} is unreachable: {why}")]
    Unreachable { addr: String, why: String },
    /// The peer refused this node's token: a configuration mistake, not a
    /// fault to retry through.
    #[error("raft peer {addr} refused this node's QUEEN_RAFT_TOKEN: {why}")]
    Refused { addr: String, why: String },
    /// The request was sent and no answer came in time: it may have been
    /// carried out.
    #[error("raft peer {addr} did not answer within {after:?}")]
    Timeout { addr: String, after: Duration },
    /// The request was sent and the connection closed before its answer:
    /// it may have been carried out.
    #[error("the connection to raft peer {addr} closed after the request was sent, before its answer")]
    AnswerLost { addr: String },
}

impl LinkError {
    /// Whether the peer may have received the request: its outcome is then
    /// not known, where an error before the send proves it was not carried out.
    pub fn after_send(&self) -> bool {
        matches!(self, LinkError::Timeout { .. } | LinkError::AnswerLost { .. })
    }
}

/// Calls awaiting their answers, by id (ordered, so that a broken
/// connection fails them in one order: a simulated run replays exactly).
type Pending = Arc<Mutex<BTreeMap<u64, oneshot::Sender<Response>>>>;

struct Conn {
    writer: tokio::sync::Mutex<WriteHalf<Stream>>,
    pending: Pending,
    /// Set by the reader once the connection broke.
    broken: Arc<std::sync::atomic::AtomicBool>,
}

pub struct Link {
    addr: String,
    /// What the connection opens with: this node, its token and group.
    hello: Hello,
    transport: Arc<dyn Transport>,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
    next_id: AtomicU64,
}

impl Link {
    pub fn new(addr: String, hello: Hello, transport: Arc<dyn Transport>) -> Self {
        Self { addr, hello, transport, conn: tokio::sync::Mutex::new(None), next_id: AtomicU64::new(1) }
    }

    fn unreachable(&self, why: impl ToString) -> LinkError {
        LinkError::Unreachable { addr: self.addr.clone(), why: why.to_string() }
    }

    /// The live connection, opened (and introduced) when there is none.
    async fn connection(&self, timeout: Duration) -> Result<Arc<Conn>, LinkError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref().filter(|c| !c.broken.load(Ordering::Acquire)) {
            return Ok(conn.clone());
        }
        let opened = tokio::time::timeout(timeout, self.open()).await;
        let conn = opened.map_err(|_| self.unreachable(format!("no connection within {timeout:?}")))??;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    async fn open(&self) -> Result<Arc<Conn>, LinkError> {
        let mut stream = self.transport.dial(&self.addr).await.map_err(|e| self.unreachable(e))?;
        write_frame(&mut stream, &self.hello).await.map_err(|e| self.unreachable(e))?;
        let welcome: Welcome = read_frame(&mut stream).await.map_err(|e| self.unreachable(e))?;
        if let Some(why) = welcome {
            return Err(LinkError::Refused { addr: self.addr.clone(), why });
        }
        let (mut reader, writer) = tokio::io::split(stream);
        let pending: Pending = Arc::default();
        let broken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conn = Arc::new(Conn {
            writer: tokio::sync::Mutex::new(writer),
            pending: pending.clone(),
            broken: broken.clone(),
        });
        tokio::spawn(async move {
            while let Ok((id, response)) = read_frame::<(u64, Response)>(&mut reader).await {
                if let Some(tx) = pending.lock().expect("pending calls lock").remove(&id) {
                    let _ = tx.send(response);
                }
            }
            broken.store(true, Ordering::Release);
            // Every call still waiting learns the connection is gone.
            pending.lock().expect("pending calls lock").clear();
        });
        Ok(conn)
    }

    /// Sends `request` and waits at most `timeout` for its answer.
    pub async fn call(&self, request: Request, timeout: Duration) -> Result<Response, LinkError> {
        let conn = self.connection(timeout).await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        conn.pending.lock().expect("pending calls lock").insert(id, tx);
        let sent = {
            let mut writer = conn.writer.lock().await;
            write_frame(&mut *writer, &(id, request)).await
        };
        // A frame the write did not finish is never read whole by the
        // peer, so a failed write is a request not sent.
        if let Err(e) = sent {
            conn.broken.store(true, Ordering::Release);
            conn.pending.lock().expect("pending calls lock").remove(&id);
            return Err(self.unreachable(e));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(LinkError::AnswerLost { addr: self.addr.clone() }),
            Err(_) => {
                conn.pending.lock().expect("pending calls lock").remove(&id);
                Err(LinkError::Timeout { addr: self.addr.clone(), after: timeout })
            }
        }
    }
}
