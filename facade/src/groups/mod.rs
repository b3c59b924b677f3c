//! Consumer-group membership, kept in this node's memory as a Kafka
//! coordinator keeps it: classic groups (JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup) and groups of the consumer group protocol of KIP-848
//! (ConsumerGroupHeartbeat), side by side under different group ids, and
//! share groups (KIP-932, ShareGroupHeartbeat).
//! Only the committed offsets are durable: they are Queen cursors, written
//! through the broker. A restart forgets the members, and clients rejoin when
//! their next heartbeat answers UNKNOWN_MEMBER_ID.

mod assignor;
mod consumer_group;
mod consumer_groups;
mod coordinator;
mod group;
mod share_groups;

pub use assignor::TopicPartition;
pub use consumer_group::{Beat, ConsumerGroup, Topic};
pub use consumer_groups::ConsumerGroups;
pub use coordinator::Coordinator;
pub use group::{JoinAsk, JoinOutcome, State, SyncOutcome};
pub use share_groups::{ShareBeat, ShareGroups, ShareMember};
