//! The openraft adapters: raft's log storage over the log store, its state
//! machine over the state machine, and the types they share. openraft
//! decides what is committed; the qlog stays the log and the message store.

pub mod apply_guard;
mod balancer;
mod committed;
pub(crate) mod force_recover;
pub(crate) mod founding;
mod link;
pub mod log_storage;
pub mod membership;
pub(crate) mod network;
pub(crate) mod port;
pub(crate) mod proposer;
pub(crate) mod read_confirm;
mod refound;
pub mod replicator;
mod rpc;
pub mod runtime;
mod server;
pub mod snapshot_transfer;
mod standing;
pub mod state_machine;
pub mod transport;
pub mod types;
pub mod version_gate;
