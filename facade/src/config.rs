//! How the listener presents itself and what it allows.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct FacadeConfig {
    /// This node's broker id in metadata answers.
    pub node_id: i32,
    /// The host and port clients are told to connect to.
    pub advertised_host: String,
    pub advertised_port: i32,
    pub cluster_id: String,
    /// The largest request frame taken; a larger one closes the connection.
    pub max_request_bytes: usize,
    /// The largest record batch a produce writes to a topic without a
    /// `max.message.bytes` of its own (Kafka's `message.max.bytes`).
    pub message_max_bytes: usize,
    /// The longest `transaction.timeout.ms` a producer may ask for (Kafka's
    /// `transaction.max.timeout.ms`).
    pub transaction_max_timeout_ms: i32,
    /// Connections beyond this are closed as they arrive.
    pub max_connections: usize,
    /// Create a topic when a client produces to it or asks metadata for it.
    pub auto_create_topics: bool,
    /// Partitions of an automatically created topic.
    pub num_partitions: u32,
    /// How long a new group waits for more members before its first
    /// assignment (Kafka's `group.initial.rebalance.delay.ms`).
    pub initial_rebalance_delay: Duration,
    /// A consumer-protocol group member (KIP-848) silent this long leaves.
    pub consumer_session_timeout: Duration,
    /// How often consumer-protocol group members heartbeat.
    pub consumer_heartbeat_interval: Duration,
    /// A request begun (its first byte read) must arrive whole within this;
    /// a TLS handshake too.
    pub request_read_timeout: Duration,
    /// A connection with no request begun for this long is closed (Kafka's
    /// `connections.max.idle.ms`).
    pub connections_max_idle: Duration,
    /// The decompressed bytes all produce requests in flight may hold.
    pub decompress_budget: crate::DecompressBudget,
    /// SASL mechanisms and users; none leaves the listener open.
    pub sasl: Option<crate::sasl::SaslConfig>,
    /// How fetches' stored bytes were sent.
    pub file_bytes_sent: crate::file_range::FileBytesSent,
}
