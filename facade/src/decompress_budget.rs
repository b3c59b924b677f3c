//! The decompressed bytes every request in flight may hold together, across
//! all connections. A per-request ceiling alone lets sixteen connections
//! each take their ceiling at once; this budget is the ceiling of the sum.
//!
//! A request with compressed batches waits, first come first served, until
//! its whole ceiling is free, holds it while it decompresses, then keeps
//! only what its batches did expand to until it is answered. Waiting on one
//! reservation while holding none, no two requests can block each other.

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget counts in KiB so that a u32 of permits spans terabytes.
const UNIT: usize = 1024;

#[derive(Debug, Clone)]
pub struct DecompressBudget {
    units: Arc<Semaphore>,
    bytes: usize,
}

/// Bytes held from the budget, given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    permit: OwnedSemaphorePermit,
}

impl DecompressBudget {
    pub fn new(bytes: usize) -> Self {
        let units = bytes.div_ceil(UNIT).clamp(1, u32::MAX as usize);
        Self { units: Arc::new(Semaphore::new(units)), bytes: units * UNIT }
    }

    /// Waits until `want` bytes, or the whole budget when `want` is more,
    /// are free, and holds them.
    pub async fn reserve(&self, want: usize) -> Reservation {
        let units = want.div_ceil(UNIT).clamp(1, self.bytes / UNIT) as u32;
        let permit = self.units.clone().acquire_many_owned(units).await.expect("the budget is never closed");
        Reservation { permit }
    }
}

impl Reservation {
    pub fn bytes(&self) -> usize {
        self.permit.num_permits() * UNIT
    }

    /// Gives back all but `used` bytes.
    pub fn keep(&mut self, used: usize) {
        let surplus = self.permit.num_permits().saturating_sub(used.div_ceil(UNIT).max(1));
        drop(self.permit.split(surplus));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reservation_waits_for_the_bytes_and_gives_back_the_surplus() {
        let budget = DecompressBudget::new(100 * UNIT);
        let mut first = budget.reserve(80 * UNIT).await;
        assert_eq!(first.bytes(), 80 * UNIT);
        let second = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(50 * UNIT).await.bytes() }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "50 KiB are not free while 80 of 100 are held");
        first.keep(10 * UNIT);
        assert_eq!(second.await.unwrap(), 50 * UNIT);
        drop(first);
        assert_eq!(budget.reserve(usize::MAX).await.bytes(), 100 * UNIT, "at most the whole budget");
    }
}
