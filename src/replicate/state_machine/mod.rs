//! The state machine: the store, apply (idempotent by log index and
//! clock-free, `planner::apply`), the checkpoint, and snapshots.
//!
//! - `applier.rs` applies each durable (on one node: committed) batch in
//!   order, answers its commands, and every `QUEEN_RAFT_DURABLE_EVERY_MS`
//!   hands the changed rows to the checkpointer;
//! - `snapshot.rs` builds a snapshot (the checkpoint plus the retained qlog
//!   files) and installs one into a data directory before its boot.

pub(crate) mod applier;
pub mod snapshot;
