//! The state machine: the store, apply (idempotent by log index and
//! clock-free, `planner::apply`), the checkpoint, and snapshots.
//!
//! - `applier.rs` applies each durable (on one node: committed) batch in
//!   order and answers its commands;
//! - `after_apply.rs` is what the single node's applier and the raft state
//!   machine both do after an apply: metrics, the readers' wake-up, and the
//!   checkpoint's pace;
//! - `snapshot.rs` builds a snapshot (the checkpoint plus the retained qlog
//!   files) and installs one into a data directory before its boot.

pub mod after_apply;
pub(crate) mod applier;
pub mod snapshot;
