//! The KV namespaces the broker keeps for itself: ephemeral queue
//! declarations, Kafka producer ids and consumer-protocol groups, traces and
//! streams queries and state.
//! The KV API refuses them, so no client can forge a producer id, a trace or
//! a stream's state. (`queen-locks` and
//! `queen-supervisor` are the client's own and stay open to it.) They live
//! here, below the node and both front ends, so each imports them without
//! importing the others.

/// Ephemeral queue declarations, replayed into memory at boot.
pub const EPHEMERAL_DECLARATIONS: &str = "queen-ephemeral";
/// Where Kafka producer ids are drawn from: a KV counter, so no id repeats.
pub const KAFKA_PRODUCER_IDS: &str = "queen-kafka";
/// The state of each Kafka consumer-protocol group (KIP-848), by group id.
pub const KAFKA_CONSUMER_GROUPS: &str = "queen-kafka-groups";
/// Share groups (KIP-932, and HTTP pops that share partitions record by
/// record), by group id: each row holds the group's configs.
pub const SHARE_GROUPS: &str = "queen-share-groups";
/// Message traces.
pub const TRACES: &str = "queen-traces";

/// Streams queries, by name and by id (`planner/streams.rs`).
pub const STREAMS_QUERIES: &str = "queen-streams-queries";
/// Streams operator state, by query, partition and state key.
pub const STREAMS_STATE: &str = "queen-streams-state";

/// The cluster's own rows: the effect catalogue version it writes
/// (`replicate/raft/version_gate.rs`).
pub const CLUSTER: &str = "queen-cluster";

pub const ALL: &[&str] = &[
    CLUSTER,
    EPHEMERAL_DECLARATIONS,
    KAFKA_PRODUCER_IDS,
    KAFKA_CONSUMER_GROUPS,
    SHARE_GROUPS,
    TRACES,
    STREAMS_QUERIES,
    STREAMS_STATE,
];

/// The KV rows of users' namespaces, leaving out the broker's own (`ALL`):
/// what `kvKeys` counts.
pub fn user_rows(store: &crate::store::Store) -> usize {
    store.kv.iter().filter(|(key, _)| !ALL.iter().any(|ns| key.split('\0').next() == Some(ns))).count()
}
