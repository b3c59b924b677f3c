//! Taking connections off a listening socket, for both listeners. When the
//! process is out of file descriptors (EMFILE, ENFILE) or kernel memory,
//! `accept` fails until something closes: the loop sleeps, doubling the
//! pause up to a ceiling, instead of spinning on the error or giving up, and
//! logs it at most once per [`LOG_EVERY`]. The connections waiting meanwhile
//! stay in the kernel's backlog and are taken once descriptors free up.

use crate::throttle::{Throttle, LOG_EVERY};
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// One listener's accept loop state: its connection cap, and the throttled
/// log lines for refusals and accept failures.
pub struct Acceptor {
    listener: TcpListener,
    /// The listener's name in log lines ("kafka", "http").
    name: &'static str,
    open: Arc<Semaphore>,
    limit: usize,
    refused: Throttle,
    failed: Throttle,
    pause: Duration,
}

/// An accepted connection and its place under the cap, given back when
/// the connection's task drops it.
pub struct Accepted {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub slot: OwnedSemaphorePermit,
}

impl Acceptor {
    pub fn new(listener: TcpListener, name: &'static str, max_connections: usize) -> Self {
        Self {
            listener,
            name,
            open: Arc::new(Semaphore::new(max_connections)),
            limit: max_connections,
            refused: Throttle::new(LOG_EVERY),
            failed: Throttle::new(LOG_EVERY),
            pause: FIRST_PAUSE,
        }
    }

    /// The next connection within the cap; one over it is closed at once.
    pub async fn next(&mut self) -> Accepted {
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    self.failed_with(e).await;
                    continue;
                }
            };
            self.pause = FIRST_PAUSE;
            match self.open.clone().try_acquire_owned() {
                Ok(slot) => return Accepted { stream, peer, slot },
                Err(_) => {
                    if let Some(more) = self.refused.tick() {
                        tracing::warn!(
                            listener = self.name,
                            %peer,
                            limit = self.limit,
                            refused_since_last_line = more,
                            "connection refused: too many open"
                        );
                    }
                }
            }
        }
    }

    async fn failed_with(&mut self, e: std::io::Error) {
        // A connection reset or aborted before it was taken is that
        // connection's end, not the listener's: take the next one.
        if matches!(e.kind(), ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset) {
            return;
        }
        if let Some(more) = self.failed.tick() {
            tracing::warn!(
                listener = self.name,
                error = %e,
                pause_ms = self.pause.as_millis() as u64,
                failed_since_last_line = more,
                "accept failed; pausing before the next (out of file descriptors?)"
            );
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
    }
}
