//! The KV namespaces the broker keeps for itself: ephemeral queue
//! declarations, Kafka producer ids and traces. The KV API refuses them, so
//! no client can forge a producer id or a trace. (`queen-locks` and
//! `queen-supervisor` are the client's own and stay open to it.) They live
//! here, below the node and both front ends, so each imports them without
//! importing the others.

/// Ephemeral queue declarations, replayed into memory at boot.
pub const EPHEMERAL_DECLARATIONS: &str = "queen-ephemeral";
/// Where Kafka producer ids are drawn from: a KV counter, so no id repeats.
pub const KAFKA_PRODUCER_IDS: &str = "queen-kafka";
/// Message traces.
pub const TRACES: &str = "queen-traces";

pub const ALL: &[&str] = &[EPHEMERAL_DECLARATIONS, KAFKA_PRODUCER_IDS, TRACES];
