//! The one read-only view of the applied state the front ends read through.
//!
//! Two kinds of read. `local` is this node's applied state as it stands: for
//! status pages, metrics and the lookups that precede a command (which the
//! planner checks again on the leader). `gate` waits at the replicator's
//! read gate, after which the state `local` answers holds every write
//! committed before the call: a raft leader confirms its leadership (read
//! index) and waits for its apply to reach that index, a follower asks the
//! leader for a read index and waits until it has applied through it; on one
//! node the gate is open, since every write is answered only once applied.
//! Reads of messages, offsets and timers that a client acts on (fetches,
//! offset lookups, message and timer lookups) go through it.

use crate::replicate::{ProposeError, Replicator};
use crate::store::Store;
use std::sync::{Arc, RwLock, RwLockReadGuard};

pub type StoreRead<'a> = RwLockReadGuard<'a, Store>;

#[derive(Clone)]
pub struct StateView {
    state: Arc<RwLock<Store>>,
    replicator: Arc<dyn Replicator>,
}

impl StateView {
    pub fn new(state: Arc<RwLock<Store>>, replicator: Arc<dyn Replicator>) -> Self {
        Self { state, replicator }
    }

    /// This node's applied state as it stands; under raft a follower's may
    /// lag the leader's.
    pub fn local(&self) -> StoreRead<'_> {
        self.state.read().expect("store lock")
    }

    /// Waits at the read gate: what `local` answers after it holds every
    /// write committed before this call.
    pub async fn gate(&self) -> Result<(), ProposeError> {
        self.replicator.read_gate().await
    }
}
