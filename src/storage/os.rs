//! The operating system's files: what a node runs on.

use super::{DirEntry, Reserve, Storage, StorageFile};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Default, Clone, Copy)]
pub struct OsStorage;

impl OsStorage {
    pub fn shared() -> Arc<dyn Storage> {
        Arc::new(OsStorage)
    }
}

#[derive(Debug)]
struct OsFile(File);

/// The most one pwrite of a qlog file writes.
const WRITE_PIECE: usize = 1 << 20;

impl StorageFile for OsFile {
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.0.as_raw_fd())
    }

    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
        self.0.read_exact_at(buf, pos)
    }

    /// pread(2) straight into the vector's spare capacity: no zeroing first.
    fn read_vec_at(&self, len: usize, pos: u64) -> std::io::Result<Vec<u8>> {
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        while buf.len() < len {
            let at_len = buf.len();
            let at = libc::off_t::try_from(pos + at_len as u64)
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a read past off_t"))?;
            let spare = &mut buf.spare_capacity_mut()[..len - at_len];
            // SAFETY: pread writes at most `spare.len()` bytes to memory the
            // vector owns and nothing else reads meanwhile.
            let n = unsafe { libc::pread(self.0.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len(), at) };
            match n {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                // SAFETY: pread initialised the first `n` bytes of the spare capacity.
                1.. => unsafe { buf.set_len(buf.len() + n as usize) },
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        Ok(buf)
    }

    /// One pwrite per MiB at most. A group commit stages megabytes for a
    /// log, and on this project's machine (Linux 6.18, ext4) the kernel
    /// copied a 5 MiB pwrite into the page cache at 2.5 s of system time per
    /// GiB, a 1 MiB one at 0.18 s: writing in pieces took half of a Kafka
    /// produce's CPU away (`docs/benchmarks.md`).
    fn write_all_at(&self, bytes: &[u8], pos: u64) -> std::io::Result<()> {
        let mut at = pos;
        for piece in bytes.chunks(WRITE_PIECE) {
            self.0.write_all_at(piece, at)?;
            at += piece.len() as u64;
        }
        Ok(())
    }

    fn datasync(&self) -> std::io::Result<()> {
        self.0.sync_data()
    }

    fn truncate_durable(&self, len: u64) -> std::io::Result<()> {
        self.0.set_len(len)?;
        self.0.sync_all()
    }
}

impl Storage for OsStorage {
    fn open(&self, path: &Path, create: bool) -> std::io::Result<Arc<dyn StorageFile>> {
        // Never truncated: a file opened for appending keeps what it holds.
        let file = OpenOptions::new().read(true).write(true).create(create).truncate(false).open(path)?;
        Ok(Arc::new(OsFile(file)))
    }

    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::write(path, bytes)
    }

    fn write_durable(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let mut f = File::create(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    }

    fn len(&self, path: &Path) -> std::io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_dir(path)
    }

    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for dirent in std::fs::read_dir(dir)? {
            let dirent = dirent?;
            out.push(DirEntry {
                name: dirent.file_name().to_string_lossy().into_owned(),
                is_dir: dirent.file_type()?.is_dir(),
            });
        }
        Ok(out)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn reserve(&self, dir: &Path) -> Option<Reserve> {
        File::open(dir).ok().map(|f| Box::new(f) as Reserve)
    }

    /// The kernel copies (`copy_file_range` where it can): a segment is up
    /// to 64 MiB.
    fn copy_durable(&self, from: &Path, to: &Path) -> std::io::Result<u64> {
        let bytes = std::fs::copy(from, to)?;
        File::open(to)?.sync_all()?;
        Ok(bytes)
    }

    /// A rename: the file is already where the seam's files are.
    fn import(&self, outside: &Path, path: &Path) -> std::io::Result<()> {
        File::open(outside)?.sync_all()?;
        std::fs::rename(outside, path)
    }

    fn export(&self, path: &Path, outside: &Path) -> std::io::Result<()> {
        std::fs::rename(path, outside)?;
        self.sync_dir(outside.parent().unwrap_or(Path::new(".")))
    }
}
