//! Classic consumer-group membership (JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup), kept in this node's memory as a Kafka coordinator keeps it.
//! Only the committed offsets are durable: they are Queen cursors, written
//! through the broker. A restart forgets the members, and clients rejoin when
//! their next heartbeat answers UNKNOWN_MEMBER_ID.

mod coordinator;
mod group;

pub use coordinator::Coordinator;
pub use group::{JoinAsk, JoinOutcome, State, SyncOutcome};
