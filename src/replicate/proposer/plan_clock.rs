//! The time the planner stamps on what it plans, one rule on one node and
//! under raft: later than anything it stamped before and than anything
//! applied (an entry of an earlier leader, or of this node before a
//! restart), and the wall clock's time when that is later still. So time
//! never goes back in the log, even when the wall clock steps back or a
//! new leader's clock is behind the old one's.

#[derive(Debug, Default)]
pub struct PlanClock {
    last_us: i64,
}

impl PlanClock {
    /// The time for the next chunk of commands: `now_us` (the wall clock)
    /// unless that is not past the last stamp or the store's `applied_us`.
    pub fn stamp(&mut self, now_us: i64, applied_us: i64) -> i64 {
        let stamped = now_us.max(self.last_us + 1).max(applied_us + 1);
        self.last_us = stamped;
        stamped
    }
}

#[cfg(test)]
mod tests {
    use super::PlanClock;

    #[test]
    fn the_stamp_never_goes_back_when_the_wall_clock_or_a_leader_change_would_take_it_back() {
        let mut clock = PlanClock::default();
        assert_eq!(clock.stamp(1_000, 0), 1_000);
        // The wall clock steps back: the stamp moves on by one.
        assert_eq!(clock.stamp(900, 0), 1_001);
        // What was applied (another leader's entries) is ahead of both.
        assert_eq!(clock.stamp(1_002, 5_000), 5_001);
        assert_eq!(clock.stamp(6_000, 5_000), 6_000);
    }
}
