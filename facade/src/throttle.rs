//! At most one log line per interval for an event that can repeat
//! thousands of times a second (a refused connection, a failing accept):
//! the first is logged at once, the ones after it are counted and the count
//! goes with the next line logged.

use std::time::{Duration, Instant};

/// How often a repeating event may be logged.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl Throttle {
    pub fn new(every: Duration) -> Self {
        Self { every, last: None, held: 0 }
    }

    /// Counts one event; answers `Some(n)` when this one is to be logged,
    /// `n` being the events since the last line that were not.
    pub fn tick(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now.duration_since(last) < self.every) {
            self.held += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_the_first_then_counts_until_the_interval_passes() {
        let mut t = Throttle::new(Duration::from_millis(50));
        assert_eq!(t.tick(), Some(0));
        assert_eq!(t.tick(), None);
        assert_eq!(t.tick(), None);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(t.tick(), Some(2));
        assert_eq!(t.tick(), None);
    }
}
