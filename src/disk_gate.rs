//! The disk gate: once the data directory's volume is `QUEEN_STORAGE_FULL_PCT`
//! (85) percent full, everything that grows storage is refused with 507
//! `storage_full`, while reads, acks and deletes go on.
//!
//! The volume is measured every `MEASURE_EVERY` by a thread of its own, so
//! the gate opens again by itself once deletes, retention and reclaim have
//! freed space, whether or not anyone writes meanwhile. Between two
//! measurements the gate counts what is on its way to the disk: the bytes of
//! every write it admitted and that has not answered yet, and of those that
//! answered since the last measurement. A write is admitted only when those
//! and its own bytes still fit below the mark, so many writes admitted side
//! by side cannot carry the volume far past it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the volume is measured.
const MEASURE_EVERY: Duration = Duration::from_millis(250);

pub struct DiskGate {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    full_pct: f64,
    /// The bytes that may be used, as last measured (`u64::MAX` unknown).
    mark: AtomicU64,
    /// The bytes used, as last measured.
    used: AtomicU64,
    /// Bytes of admitted writes that have not answered.
    in_flight: AtomicU64,
    /// Bytes of writes that answered since the last measurement.
    landed: AtomicU64,
    full: AtomicBool,
}

/// An admitted write's bytes, counted until it is dropped (once the write
/// has answered, so they are on disk).
pub struct Admission {
    inner: Arc<Inner>,
    bytes: u64,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.inner.in_flight.fetch_sub(self.bytes, Ordering::AcqRel);
        self.inner.landed.fetch_add(self.bytes, Ordering::AcqRel);
    }
}

impl DiskGate {
    /// A gate on the volume of `dir`, measured now and then every
    /// `MEASURE_EVERY` for as long as the gate lives.
    pub fn new(dir: PathBuf, full_pct: f64) -> Self {
        let inner = Arc::new(Inner {
            dir,
            full_pct,
            mark: AtomicU64::new(u64::MAX),
            used: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            landed: AtomicU64::new(0),
            full: AtomicBool::new(false),
        });
        inner.measure();
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("disk-gate".into())
            .spawn(move || loop {
                std::thread::sleep(MEASURE_EVERY);
                match weak.upgrade() {
                    Some(inner) => inner.measure(),
                    None => return,
                }
            })
            .expect("spawn the disk gate's thread");
        Self { inner }
    }

    /// Whether writes that grow storage are refused now.
    pub fn is_full(&self) -> bool {
        self.inner.estimate(0) >= self.inner.mark.load(Ordering::Acquire)
    }

    /// Admits a write of about `bytes`, counted until the admission is
    /// dropped; `None` when the gate is closed or the write would take the
    /// volume past the mark.
    pub fn admit(&self, bytes: u64) -> Option<Admission> {
        let inner = &self.inner;
        // Counted before the check, so writes admitted side by side each
        // see the others' bytes.
        let before = inner.in_flight.fetch_add(bytes, Ordering::AcqRel);
        let mark = inner.mark.load(Ordering::Acquire);
        let used = inner.used.load(Ordering::Acquire) + inner.landed.load(Ordering::Acquire) + before;
        if used >= mark || used.saturating_add(bytes) > mark {
            inner.in_flight.fetch_sub(bytes, Ordering::AcqRel);
            return None;
        }
        Some(Admission { inner: inner.clone(), bytes })
    }
}

impl Inner {
    /// The bytes used once what is on its way has landed, plus `more`.
    fn estimate(&self, more: u64) -> u64 {
        self.used.load(Ordering::Acquire)
            + self.landed.load(Ordering::Acquire)
            + self.in_flight.load(Ordering::Acquire)
            + more
    }

    fn measure(&self) {
        // Taken before the volume is looked at: a write that lands between
        // the two counts twice until the next measurement, never not at all.
        let landed = self.landed.swap(0, Ordering::AcqRel);
        let Some((used, usable)) = self.volume() else {
            self.landed.fetch_add(landed, Ordering::AcqRel);
            return;
        };
        let mark = (usable as f64 * self.full_pct / 100.0) as u64;
        self.used.store(used, Ordering::Release);
        self.mark.store(mark, Ordering::Release);
        let full = self.estimate(0) >= mark;
        if self.full.swap(full, Ordering::AcqRel) != full {
            let pct = if usable > 0 { 100.0 * used as f64 / usable as f64 } else { 0.0 };
            if full {
                tracing::warn!(used_pct = format!("{pct:.1}"), full_pct = self.full_pct, dir = %self.dir.display(), "the disk gate closed: writes that grow storage answer 507 storage_full");
            } else {
                tracing::info!(used_pct = format!("{pct:.1}"), full_pct = self.full_pct, dir = %self.dir.display(), "the disk gate opened again");
            }
        }
    }

    /// The bytes used and the bytes usable (used plus available), counted
    /// as `df` counts them: blocks reserved for the superuser are neither
    /// used nor available, so a volume with a large reserve is not full early.
    fn volume(&self) -> Option<(u64, u64)> {
        let path = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()).ok()?;
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is a valid C string and `st` a writable statvfs.
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 || st.f_blocks == 0 {
            return None;
        }
        let block = st.f_frsize as u64;
        let used = (st.f_blocks as u64).saturating_sub(st.f_bfree as u64) * block;
        Some((used, used + st.f_bavail as u64 * block))
    }
}
