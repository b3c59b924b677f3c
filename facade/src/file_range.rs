//! Bytes of a stored file that a fetch answers without reading them: on a
//! plain TCP connection the kernel sends them from the page cache to the
//! socket (`sendfile`), as Kafka serves its log segments, so the stored
//! batches of a fetch never enter this process. A TLS connection encrypts
//! them here, so they are read (one copy), as are files that have no
//! descriptor (the simulator's).

use bytes::Bytes;
use prometheus_client::metrics::counter::Counter;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// A file of the broker's store.
pub trait StoredFile: Send + Sync {
    /// The descriptor to send from; none for a file only this process can read.
    fn raw_fd(&self) -> Option<RawFd>;
    fn read_at(&self, len: usize, pos: u64) -> std::io::Result<Vec<u8>>;
}

/// `len` bytes of `file` from `pos`. The range holds the file open, so a
/// file the store lets go of meanwhile (reclaim unlinks or rewrites only
/// whole files, never a sealed file's bytes) still answers what was read.
#[derive(Clone)]
pub struct FileRange {
    pub file: Arc<dyn StoredFile>,
    pub pos: u64,
    pub len: usize,
}

impl std::fmt::Debug for FileRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileRange {{ pos: {}, len: {} }}", self.pos, self.len)
    }
}

/// How a fetch's stored bytes left: counted, so a test and an operator
/// can see that a plaintext fetch copies none of them.
#[derive(Debug, Clone, Default)]
pub struct FileBytesSent {
    /// Bytes the kernel sent straight from a file to a socket.
    pub by_sendfile: Counter,
    /// Bytes read into memory to be sent (TLS, or a file with no descriptor).
    pub read: Counter,
}

impl FileRange {
    /// The bytes, read into memory.
    pub fn read(&self, counted: &FileBytesSent) -> std::io::Result<Bytes> {
        let bytes = self.file.read_at(self.len, self.pos)?;
        counted.read.inc_by(bytes.len() as u64);
        Ok(bytes.into())
    }

    /// Whether the kernel can send the bytes itself (`send`).
    pub fn sendable(&self) -> bool {
        self.file.raw_fd().is_some()
    }

    /// Has the kernel send the bytes from the file to `socket` (`sendfile`),
    /// waiting whenever the socket's buffer is full. Only for a range that
    /// is `sendable`.
    pub async fn send(&self, socket: &TcpStream, counted: &FileBytesSent) -> std::io::Result<()> {
        let fd = self.file.raw_fd().expect("only a file with a descriptor is sent by sendfile");
        let mut offset = libc::off_t::try_from(self.pos)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a file range past off_t"))?;
        let end = offset + self.len as libc::off_t;
        while offset < end {
            let left = (end - offset) as usize;
            let sent = socket
                .async_io(Interest::WRITABLE, || {
                    // SAFETY: both descriptors are open for the call (the
                    // range holds its file, the caller its socket), and the
                    // kernel writes only `offset`, a local.
                    let n = unsafe { libc::sendfile(socket.as_raw_fd(), fd, &mut offset, left) };
                    if n < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(n as usize)
                })
                .await?;
            if sent == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "a stored file ended before the range a fetch answers",
                ));
            }
            counted.by_sendfile.inc_by(sent as u64);
        }
        Ok(())
    }
}
