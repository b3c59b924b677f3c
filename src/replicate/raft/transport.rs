//! What the raft port runs over: connections a node dials to a peer's
//! address and accepts on its own. A process dials TCP (`Tcp`); the cluster
//! simulator gives its own byte streams, delayed, stalled and broken as its
//! seed says, so the links, the framing and the server it runs are the ones
//! that ship.

use std::future::Future;
use std::io;
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

/// A connection's bytes, both ways.
pub trait Duplex: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Duplex for T {}

pub type Stream = Box<dyn Duplex>;
pub type Dialing = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;
/// A connection accepted, and who it came from (for the logs); `None` once
/// the listener is closed for good.
pub type Accepting<'a> = Pin<Box<dyn Future<Output = Option<io::Result<(Stream, String)>>> + Send + 'a>>;

/// How a node reaches a peer's raft port.
pub trait Transport: Send + Sync + 'static {
    fn dial(&self, addr: &str) -> Dialing;
}

/// A node's raft port, accepting its peers' connections.
pub trait Listener: Send + 'static {
    fn accept(&mut self) -> Accepting<'_>;
}

/// TCP, with Nagle's delay off: a heartbeat must not wait for the next.
pub struct Tcp;

impl Transport for Tcp {
    fn dial(&self, addr: &str) -> Dialing {
        let addr = addr.to_string();
        Box::pin(async move {
            let stream = TcpStream::connect(&addr).await?;
            let _ = stream.set_nodelay(true);
            Ok(Box::new(stream) as Stream)
        })
    }
}

impl Listener for TcpListener {
    fn accept(&mut self) -> Accepting<'_> {
        Box::pin(async move {
            Some(TcpListener::accept(self).await.map(|(stream, peer)| {
                let _ = stream.set_nodelay(true);
                (Box::new(stream) as Stream, peer.to_string())
            }))
        })
    }
}
