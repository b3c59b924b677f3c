//! The raft port a node's groups share (`QUEEN_RAFT_GROUPS`): one address
//! for all of them, each connection for one group, named by its `Hello`.
//! With one group its server accepts on the port itself, as before groups;
//! with several, a router on a runtime of its own reads each connection's
//! `Hello` and hands the connection, `Hello` and all, to that group's
//! server, which reads it as if it had accepted the connection itself.

use super::rpc::{Hello, Welcome, MAX_HELLO};
use super::transport::{Accepting, Listener, Stream};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// How long a new connection may take to say which group it is for.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// One group's share of the raft port: what its server accepts on.
pub enum PortShare {
    /// The node's only group: the port itself.
    Whole(std::net::TcpListener),
    /// One group of several: the connections the router sends it.
    Routed(mpsc::Receiver<(Stream, String)>),
}

impl PortShare {
    /// The listener the group's server serves; on the runtime that serves
    /// it, which a TCP listener registers with.
    pub fn listener(self) -> io::Result<Box<dyn Listener>> {
        Ok(match self {
            PortShare::Whole(std) => Box::new(tokio::net::TcpListener::from_std(std)?),
            PortShare::Routed(routed) => Box::new(routed),
        })
    }
}

impl Listener for mpsc::Receiver<(Stream, String)> {
    fn accept(&mut self) -> Accepting<'_> {
        Box::pin(async move { self.recv().await.map(Ok) })
    }
}

/// The router of a port shared by several groups, running as long as the
/// node does.
pub struct RaftPort {
    _runtime: tokio::runtime::Runtime,
}

/// Binds the raft port for `groups` groups: one share per group, group 0
/// first, and the router when there are several.
pub fn bind(listen: SocketAddr, groups: u32) -> io::Result<(Option<RaftPort>, Vec<PortShare>)> {
    let std = std::net::TcpListener::bind(listen)?;
    std.set_nonblocking(true)?;
    if groups == 1 {
        return Ok((None, vec![PortShare::Whole(std)]));
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("raft-port").enable_all().build()?;
    let listener = {
        let _entered = runtime.enter();
        tokio::net::TcpListener::from_std(std)?
    };
    let (router, shares) = split(Box::new(listener), groups);
    runtime.spawn(router);
    Ok((Some(RaftPort { _runtime: runtime }), shares))
}

/// Splits `listener` among `groups` groups: the router it answers sends
/// each group the connections whose `Hello` names it, for as long as it
/// runs (a process's port runtime runs it; the cluster simulator, a task).
pub fn split(listener: Box<dyn Listener>, groups: u32) -> (impl Future<Output = ()> + Send, Vec<PortShare>) {
    let (senders, shares): (Vec<_>, Vec<_>) = (0..groups)
        .map(|_| {
            let (tx, rx) = mpsc::channel(64);
            (tx, PortShare::Routed(rx))
        })
        .unzip();
    (route(listener, senders), shares)
}

/// Accepts every connection and routes it by its `Hello`'s group.
async fn route(mut listener: Box<dyn Listener>, groups: Vec<mpsc::Sender<(Stream, String)>>) {
    while let Some(accepted) = listener.accept().await {
        let (mut stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "the raft port could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let groups = groups.clone();
        tokio::spawn(async move {
            let Ok(Ok(head)) = tokio::time::timeout(HELLO_TIMEOUT, read_hello(&mut stream)).await else { return };
            let group = match rmp_serde::from_slice::<Hello>(&head[4..]) {
                Ok(hello) => hello.group,
                Err(e) => return tracing::debug!(%peer, error = %e, "a raft connection's hello does not decode"),
            };
            match groups.get(group as usize) {
                Some(tx) => {
                    let _ = tx.send((Box::new(Replayed { head, at: 0, rest: stream }), peer)).await;
                }
                None => {
                    let refusal: Welcome = Some(format!("this node has no raft group {group}"));
                    let _ = super::rpc::write_frame(&mut stream, &refusal).await;
                }
            }
        });
    }
}

/// The `Hello` frame's bytes, its length prefix included.
async fn read_hello(stream: &mut Stream) -> io::Result<Vec<u8>> {
    let len = stream.read_u32().await?;
    if len > MAX_HELLO {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a raft hello of {len} bytes")));
    }
    let mut head = vec![0; 4 + len as usize];
    head[..4].copy_from_slice(&len.to_be_bytes());
    stream.read_exact(&mut head[4..]).await?;
    Ok(head)
}

/// A connection whose first bytes the router already read: it reads them
/// again first, then the rest as it comes.
struct Replayed {
    head: Vec<u8>,
    at: usize,
    rest: Stream,
}

impl AsyncRead for Replayed {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.at < self.head.len() {
            let n = buf.remaining().min(self.head.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.head[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.rest).poll_read(cx, buf)
    }
}

impl AsyncWrite for Replayed {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.rest).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.rest).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.rest).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicate::raft::rpc::{read_frame, write_frame};

    #[tokio::test]
    async fn a_routed_connection_reads_its_hello_again_then_the_rest() {
        let (mut near, far) = tokio::io::duplex(1 << 12);
        let hello = Hello { token: "t".into(), from: 2, group: 3 };
        write_frame(&mut near, &hello).await.unwrap();
        write_frame(&mut near, &(7u64, "after")).await.unwrap();
        let mut far: Stream = Box::new(far);
        let head = read_hello(&mut far).await.unwrap();
        let mut replayed = Replayed { head, at: 0, rest: far };
        let again: Hello = read_frame(&mut replayed).await.unwrap();
        assert_eq!((again.from, again.group), (2, 3));
        let next: (u64, String) = read_frame(&mut replayed).await.unwrap();
        assert_eq!(next, (7, "after".to_string()));
    }

    #[test]
    fn a_hello_without_a_group_reads_as_group_0() {
        #[derive(serde::Serialize)]
        struct BeforeGroups {
            token: String,
            from: u64,
        }
        let old = rmp_serde::to_vec_named(&BeforeGroups { token: "t".into(), from: 1 }).unwrap();
        let hello: Hello = rmp_serde::from_slice(&old).unwrap();
        assert_eq!((hello.from, hello.group), (1, 0));
    }
}
