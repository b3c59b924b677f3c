//! One process's view of a node's simulated storage: once the process is
//! killed, whatever of it still runs (openraft's tasks run on until they
//! are shut down) dies at its next touch of the storage, with a panic that
//! ends its task, so nothing it does lands after the crash. (An error
//! would not do: a qlog file that cannot be opened is retried forever.)

use super::storage::SimStorage;
use queen::seams::storage::{DirEntry, Reserve, Storage, StorageFile};
use std::io::Result;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Fenced {
    inner: SimStorage,
    dead: Arc<AtomicBool>,
}

/// What a dead process's task ends with; `main.rs` keeps it quiet.
pub const DEAD: &str = "the process is dead (simulated)";

impl Fenced {
    pub fn new(inner: SimStorage) -> Self {
        Self { inner, dead: Arc::default() }
    }

    /// The process dies: from now on nothing it holds reaches the storage.
    pub fn kill(&self) {
        self.dead.store(true, Ordering::Release);
    }

    fn alive(&self) -> &SimStorage {
        if self.dead.load(Ordering::Acquire) {
            std::panic::panic_any(DEAD);
        }
        &self.inner
    }
}

#[derive(Debug)]
struct FencedFile {
    inner: Arc<dyn StorageFile>,
    dead: Arc<AtomicBool>,
}

impl FencedFile {
    fn alive(&self) -> &dyn StorageFile {
        if self.dead.load(Ordering::Acquire) {
            std::panic::panic_any(DEAD);
        }
        &*self.inner
    }
}

impl StorageFile for FencedFile {
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> Result<()> {
        self.alive().read_exact_at(buf, pos)
    }

    fn write_all_at(&self, bytes: &[u8], pos: u64) -> Result<()> {
        self.alive().write_all_at(bytes, pos)
    }

    fn datasync(&self) -> Result<()> {
        self.alive().datasync()
    }

    fn truncate_durable(&self, len: u64) -> Result<()> {
        self.alive().truncate_durable(len)
    }
}

impl Storage for Fenced {
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn StorageFile>> {
        let inner = self.alive().open(path, create)?;
        Ok(Arc::new(FencedFile { inner, dead: self.dead.clone() }))
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        self.alive().read(path)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.alive().write(path, bytes)
    }

    fn write_durable(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.alive().write_durable(path, bytes)
    }

    fn len(&self, path: &Path) -> Result<u64> {
        self.alive().len(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.alive().exists(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.alive().rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        self.alive().remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        self.alive().remove_dir(path)
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.alive().create_dir_all(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<DirEntry>> {
        self.alive().list(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.alive().sync_dir(dir)
    }

    fn reserve(&self, dir: &Path) -> Option<Reserve> {
        self.alive().reserve(dir)
    }

    fn copy_durable(&self, from: &Path, to: &Path) -> Result<u64> {
        self.alive().copy_durable(from, to)
    }

    fn import(&self, outside: &Path, path: &Path) -> Result<()> {
        self.alive().import(outside, path)
    }

    fn export(&self, path: &Path, outside: &Path) -> Result<()> {
        self.alive().export(path, outside)
    }
}
