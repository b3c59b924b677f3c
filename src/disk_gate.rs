//! The disk gate: once the data directory's volume is `QUEEN_STORAGE_FULL_PCT`
//! (85) percent full, everything that grows storage is refused with 507
//! `storage_full`, while reads, acks and deletes go on.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How long one look at the volume is trusted, in milliseconds.
const RECHECK_MS: i64 = 1000;

pub struct DiskGate {
    dir: PathBuf,
    full_pct: f64,
    checked_ms: AtomicI64,
    full: AtomicBool,
}

impl DiskGate {
    pub fn new(dir: PathBuf, full_pct: f64) -> Self {
        Self { dir, full_pct, checked_ms: AtomicI64::new(i64::MIN), full: AtomicBool::new(false) }
    }

    /// Whether writes that grow storage are refused now.
    pub fn is_full(&self) -> bool {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        if now.saturating_sub(self.checked_ms.load(Ordering::Relaxed)) >= RECHECK_MS {
            self.checked_ms.store(now, Ordering::Relaxed);
            self.full.store(self.used_pct().is_some_and(|p| p >= self.full_pct), Ordering::Relaxed);
        }
        self.full.load(Ordering::Relaxed)
    }

    fn used_pct(&self) -> Option<f64> {
        let path = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()).ok()?;
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is a valid C string and `st` a writable statvfs.
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 || st.f_blocks == 0 {
            return None;
        }
        // As `df` counts: blocks reserved for the superuser are neither used
        // nor available, so a volume with a large reserve is not full early.
        let used = st.f_blocks.saturating_sub(st.f_bfree) as f64;
        let usable = used + st.f_bavail as f64;
        (usable > 0.0).then(|| 100.0 * used / usable)
    }
}

/// Whether a request grows storage whatever its body says. KV and lock
/// calls are judged by their handlers, which know which operations write.
pub fn grows_storage(method: &axum::http::Method, path: &str) -> bool {
    use axum::http::Method;
    (*method == Method::POST
        && ["/api/v1/push", "/api/v1/transaction", "/api/v1/configure", "/api/v1/timers", "/api/v1/traces"]
            .contains(&path))
        || (*method == Method::PUT && path.starts_with("/api/v1/kv/"))
}

/// Middleware: refuses what grows storage while the gate is closed.
pub async fn guard(
    axum::extract::State(node): axum::extract::State<std::sync::Arc<crate::node::Node>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if grows_storage(request.method(), request.uri().path()) && node.disk_gate.is_full() {
        return crate::http::error::ApiError::storage_full().before_the_body();
    }
    next.run(request).await
}
