//! Planning batches by hand in unit tests: a batch planned and not yet
//! applied, as the replicator's pipeline leaves it while the disk syncs.

use crate::planner::apply::apply;
use crate::planner::command::Command;
use crate::planner::{Planned, Planner};
use crate::qlog::files::Location;
use crate::store::Store;

/// Plans `command` as batch `batch`, which the store does not hold yet.
pub fn plan(planner: &mut Planner, store: &Store, batch: u64, command: Command) -> Planned {
    planner.open_batch(batch);
    planner.plan(store, command, batch as i64 * 1_000)
}

/// Applies a planned entry; its message records sit nowhere real.
pub fn settle(store: &mut Store, planned: &Planned) {
    if let Some(entry) = &planned.entry {
        let at = Location { log: 1, segment: 1, pos: 0, frame_len: 0 };
        apply(store, entry, &vec![at; entry.messages.len()]);
    }
}
