//! Time as the log store reads it (when an idle log's file is old enough to
//! seal, and how long a reclaim pass has run), injected so that the
//! simulator drives it from its seed where a node reads the machine's
//! monotonic clock. The planner never reads a
//! clock: its time comes with each batch.

use std::sync::Arc;
use std::time::Instant;

pub trait Clock: Send + Sync {
    /// Microseconds since this node booted; never goes back.
    fn monotonic_us(&self) -> u64;
}

/// The machine's monotonic clock, counted from the boot.
pub struct SystemClock {
    boot: Instant,
}

impl SystemClock {
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(SystemClock { boot: Instant::now() })
    }
}

impl Clock for SystemClock {
    fn monotonic_us(&self) -> u64 {
        self.boot.elapsed().as_micros() as u64
    }
}
