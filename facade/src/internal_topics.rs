//! Kafka's internal topics, `__consumer_offsets` and `__transaction_state`.
//! Queen keeps group offsets as queue cursors and transactions as planner
//! state, so neither topic holds records here; both are still listed in
//! Metadata, marked internal, because clients rely on them being there:
//! a pattern subscription skips topics marked internal (Kafka's
//! `exclude.internal.topics`), and tools find the coordinator's topic by
//! name. What Kafka does with them, and what Queen does instead:
//!
//! - Produce: refused with INVALID_TOPIC_EXCEPTION, as Kafka refuses a
//!   client's append to an internal topic.
//! - Fetch: refused with TOPIC_AUTHORIZATION_FAILED. Kafka serves the
//!   coordinator's own records to a principal allowed to read them; Queen
//!   has no such records, and an empty log would tell a reader that no group
//!   ever committed.
//! - CreateTopics: TOPIC_ALREADY_EXISTS; DeleteTopics: INVALID_TOPIC_EXCEPTION;
//!   ListOffsets: unknown, as nothing is stored under them.
//! - KIP-848 regular expressions resolved by the coordinator never match
//!   them (`topics::visible` leaves them out), so no member is assigned a
//!   topic it cannot read.
//!
//! A queue created over HTTP under one of these names stays HTTP-only.

use crate::broker::TopicView;

pub const CONSUMER_OFFSETS: &str = "__consumer_offsets";
pub const TRANSACTION_STATE: &str = "__transaction_state";

/// Each internal topic and its topic id: fixed, so it is the same on every
/// node and across restarts (version 4 UUIDs drawn once for this purpose).
const INTERNAL: [(&str, [u8; 16]); 2] = [
    (CONSUMER_OFFSETS, *b"\x6f\x1c\x2a\x9e\x53\x0b\x4d\x87\xa1\x44\x0e\x7c\x93\x5d\x2f\x01"),
    (TRANSACTION_STATE, *b"\x2b\x8e\x71\x0d\xc4\x36\x4f\x19\x9a\x5e\x62\xd0\x18\xb7\x4c\x02"),
];

pub fn is_internal(name: &str) -> bool {
    INTERNAL.iter().any(|(n, _)| *n == name)
}

/// How Metadata shows one: a single partition led by the node asked.
pub fn view(name: &str) -> Option<TopicView> {
    INTERNAL.iter().find(|(n, _)| *n == name).map(|(n, id)| TopicView { name: n.to_string(), id: *id, partitions: 1 })
}

pub fn by_id(id: [u8; 16]) -> Option<TopicView> {
    INTERNAL.iter().find(|(_, i)| *i == id).and_then(|(n, _)| view(n))
}

pub fn views() -> Vec<TopicView> {
    INTERNAL.iter().filter_map(|(n, _)| view(n)).collect()
}
