//! The proposer, on the leader: the planner and its overlay (decisions keyed
//! by the log index of the entry that made them, forgotten once the store
//! applies that index, and dropped whole when leadership is lost:
//! `Planner::lead`). It plans each command against the store and what is
//! planned but not applied yet, stamps each entry with the log id the log
//! gives the next entry, and hands the entries to the log store's append.
//! Only a leader plans; a follower's commands answer `NotLeader`.

pub(crate) mod inbox;
pub(crate) mod plan_clock;
pub(crate) mod sequencer;

pub use inbox::Msg;
