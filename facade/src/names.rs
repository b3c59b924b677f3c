//! Conversions between Rust strings and the protocol's string newtypes.

use protocol::messages::{BrokerId, GroupId, TopicName, TransactionalId};
use protocol::StrBytes;

pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn topic_name(s: &str) -> TopicName {
    TopicName(str_bytes(s))
}

pub fn group_id(s: &str) -> GroupId {
    GroupId(str_bytes(s))
}

pub fn broker_id(id: i32) -> BrokerId {
    BrokerId(id)
}

pub fn uuid(bytes: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(bytes)
}

pub fn transactional_id(s: &str) -> TransactionalId {
    TransactionalId(str_bytes(s))
}
