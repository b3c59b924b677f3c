//! Time as the node reads it, injected so that the simulators drive it from
//! their seeds where a node reads the machine's clocks: the monotonic clock
//! for the log store (when an idle log's file is old enough to seal, how
//! long a reclaim pass has run), the wall clock for the proposers (the time
//! each planned chunk is stamped with, `plan_clock.rs`). The planner never
//! reads a clock: its time comes with each chunk.

use std::sync::Arc;
use std::time::Instant;

pub trait Clock: Send + Sync {
    /// Microseconds since this node booted; never goes back.
    fn monotonic_us(&self) -> u64;
    /// Microseconds since the Unix epoch; may step back.
    fn wall_us(&self) -> i64;
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

    fn wall_us(&self) -> i64 {
        chrono::Utc::now().timestamp_micros()
    }
}
