//! Every setting, as an environment variable named as in the seeds (a flag
//! of the same meaning too); `queen --help` lists them with their defaults.

use clap::Parser;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "queen",
    version,
    about = "Queen: a message broker with a Kafka wire protocol front end and a native HTTP queue API over one durable log"
)]
pub struct Settings {
    /// The data directory (store checkpoint and qlog).
    #[arg(long, env = "QUEEN_RAFT_DIR", default_value = "./queen-data")]
    pub data_dir: PathBuf,

    /// This node's id in a cluster; with QUEEN_RAFT_PEERS, the node replicates with openraft.
    #[arg(long, env = "QUEEN_RAFT_NODE_ID", value_parser = clap::value_parser!(u64).range(1..))]
    pub raft_node_id: Option<u64>,

    /// The cluster's voters: `ID=RAFT_ADDR[/HTTP_ADDR[/KAFKA_ADDR]]`, comma-separated, the same on every node.
    #[arg(long, env = "QUEEN_RAFT_PEERS")]
    pub raft_peers: Option<String>,

    /// Where the raft port listens.
    #[arg(long, env = "QUEEN_RAFT_ADDR", default_value = "0.0.0.0:7400")]
    pub raft_addr: SocketAddr,

    /// The secret every node of a cluster presents on the raft port; required in a cluster.
    #[arg(long, env = "QUEEN_RAFT_TOKEN", hide_env_values = true)]
    pub raft_token: Option<String>,

    /// The raft groups of a cluster, group 0 included. Fixed when the directory is founded; this
    /// build runs one.
    #[arg(long, env = "QUEEN_RAFT_GROUPS", default_value_t = 1)]
    pub raft_groups: u32,

    /// A node with an empty directory waits to be added to an existing cluster instead of founding one.
    #[arg(long, env = "QUEEN_RAFT_JOIN", default_value_t = false, action = clap::ArgAction::Set)]
    pub raft_join: bool,

    /// How long a write may wait for its commit in a cluster before it answers 503 `timeout`.
    #[arg(long, env = "QUEEN_RAFT_WRITE_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub raft_write_timeout_ms: u64,

    /// How long a cluster node keeps log entries it applied before it may purge them: a node away longer receives a snapshot instead.
    #[arg(long, env = "QUEEN_RAFT_PURGE_HOLD_S", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub raft_purge_hold_s: u64,

    /// UNSAFE: on the one survivor of a cluster that lost a majority of its disks for good, names this node; it makes itself the only voter (recovery.md).
    #[arg(long, env = "QUEEN_RAFT_FORCE_RECOVER", value_parser = clap::value_parser!(u64).range(1..))]
    pub raft_force_recover: Option<u64>,

    /// Committed entries to apply as no-ops, `INDEX:DIGEST`, comma-separated, as a poisoned entry's APPLY FAILED line and /health name them.
    #[arg(long, env = "QUEEN_RAFT_APPLY_SKIP")]
    pub raft_apply_skip: Option<String>,

    /// Where the HTTP API listens.
    #[arg(long, env = "QUEEN_HTTP_ADDR", default_value = "0.0.0.0:6632")]
    pub http_addr: SocketAddr,

    /// Where the Kafka listener listens.
    #[arg(long, env = "QUEEN_KAFKA_ADDR", default_value = "0.0.0.0:9092")]
    pub kafka_addr: SocketAddr,

    /// The host:port Kafka clients are told to connect to (default: the listen address, loopback when it is unspecified).
    #[arg(long, env = "QUEEN_KAFKA_ADVERTISED")]
    pub kafka_advertised: Option<String>,

    /// Create a topic when a Kafka client produces to it or asks metadata for it (Kafka's auto.create.topics.enable).
    #[arg(long, env = "QUEEN_KAFKA_AUTO_CREATE_TOPICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub kafka_auto_create_topics: bool,

    /// Partitions of a topic created automatically (Kafka's num.partitions).
    #[arg(long, env = "QUEEN_KAFKA_NUM_PARTITIONS", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub kafka_num_partitions: u32,

    /// The largest Kafka request taken, in bytes; a larger one closes its connection.
    #[arg(long, env = "QUEEN_KAFKA_MAX_REQUEST_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub kafka_max_request_bytes: usize,

    /// Kafka's `message.max.bytes`: the largest record batch, in bytes as
    /// produced (compressed), that a produce writes to a topic without a
    /// `max.message.bytes` of its own; a larger one is MESSAGE_TOO_LARGE.
    /// Kafka's default is 1048588; Queen's is the HTTP payload limit's.
    #[arg(long, env = "QUEEN_KAFKA_MESSAGE_MAX_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub kafka_message_max_bytes: usize,

    /// Kafka's `transaction.max.timeout.ms`: the longest
    /// `transaction.timeout.ms` a transactional producer may ask for; a
    /// longer one is INVALID_TRANSACTION_TIMEOUT.
    #[arg(long, env = "QUEEN_KAFKA_TRANSACTION_MAX_TIMEOUT_MS", default_value_t = 900_000)]
    pub kafka_transaction_max_timeout_ms: i32,

    /// How long an idempotent Kafka producer may be silent in a partition
    /// before its state there (epoch, last batches) is forgotten, in ms:
    /// Kafka's `producer.id.expiration.ms`.
    #[arg(long, env = "QUEEN_KAFKA_PRODUCER_ID_EXPIRATION_MS", default_value_t = 86_400_000)]
    pub kafka_producer_id_expiration_ms: u64,

    /// Kafka connections open at once; more are closed as they arrive.
    #[arg(long, env = "QUEEN_KAFKA_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub kafka_max_connections: usize,

    /// SASL mechanisms the Kafka listener requires, comma-separated (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); empty leaves it open.
    #[arg(long, env = "QUEEN_KAFKA_SASL_MECHANISMS", default_value = "")]
    pub kafka_sasl_mechanisms: String,

    /// The users SASL accepts, as user:password pairs separated by commas.
    #[arg(long, env = "QUEEN_KAFKA_SASL_USERS", default_value = "", hide_env_values = true)]
    pub kafka_sasl_users: String,

    /// How long a new consumer group waits for more members before its first assignment (Kafka's group.initial.rebalance.delay.ms).
    #[arg(long, env = "QUEEN_KAFKA_INITIAL_REBALANCE_DELAY_MS", default_value_t = 3000)]
    pub kafka_initial_rebalance_delay_ms: u64,

    /// How long a member of a consumer-protocol group (KIP-848) may go without a heartbeat before it leaves (Kafka's group.consumer.session.timeout.ms).
    #[arg(long, env = "QUEEN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", default_value_t = 45_000)]
    pub kafka_consumer_session_timeout_ms: u64,

    /// How often members of a consumer-protocol group (KIP-848) are asked to heartbeat (Kafka's group.consumer.heartbeat.interval.ms).
    #[arg(long, env = "QUEEN_KAFKA_CONSUMER_HEARTBEAT_INTERVAL_MS", default_value_t = 5_000)]
    pub kafka_consumer_heartbeat_interval_ms: u64,

    /// zstd level for stored payloads of at least 512 bytes; 0 stores them raw.
    #[arg(long, env = "QUEEN_RAFT_QLOG_ZSTD_LEVEL", default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..=22))]
    pub zstd_level: i32,

    /// A qlog file is sealed and the next one started once it reaches this size.
    #[arg(long, env = "QUEEN_RAFT_SEGMENT_BYTES", default_value_t = 64 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(4096..))]
    pub segment_bytes: u64,

    /// 0: one log per queue. K > 0: queues share K logs (queue id % K). Fixed when the directory is created.
    #[arg(long, env = "QUEEN_QLOG_SHARDS", default_value_t = 0)]
    pub qlog_shards: u32,

    /// Group-commit lanes. Fixed when the directory is created; this build runs one.
    #[arg(long, env = "QUEEN_QLOG_LANES", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1))]
    pub qlog_lanes: u32,

    /// A store checkpoint is written at least this often (milliseconds).
    #[arg(long, env = "QUEEN_RAFT_DURABLE_EVERY_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub durable_every_ms: u64,

    /// ... or once this many qlog bytes were written since the last one.
    #[arg(long, env = "QUEEN_RAFT_DURABLE_EVERY_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub durable_every_bytes: u64,

    /// Seconds between two scrubs of the whole store checkpoint; 0 turns the scrub off.
    #[arg(long, env = "QUEEN_STORE_SCRUB_EVERY_S", default_value_t = 21600)]
    pub scrub_every_s: u64,

    /// Rows the scrub verifies per second.
    #[arg(long, env = "QUEEN_STORE_SCRUB_ROWS_PER_S", default_value_t = 2000)]
    pub scrub_rows_per_s: usize,

    /// Seconds between two scrubs of every sealed qlog file; 0 turns the scrub off.
    #[arg(long, env = "QUEEN_QLOG_SCRUB_EVERY_S", default_value_t = 21600)]
    pub qlog_scrub_every_s: u64,

    /// Bytes of sealed qlog files the scrub reads per second.
    #[arg(long, env = "QUEEN_QLOG_SCRUB_BYTES_PER_S", default_value_t = 16 * 1024 * 1024)]
    pub qlog_scrub_bytes_per_s: u64,

    /// Partitions the retention scanner walks per second.
    #[arg(long, env = "QUEEN_RAFT_RETENTION_SCAN_PER_S", default_value_t = 50_000)]
    pub retention_scan_per_s: usize,

    /// The shortest time transactionId hashes are kept after their message
    /// was stored, in seconds, so dedup outlives the payload.
    #[arg(long, env = "QUEEN_RAFT_TXN_WINDOW_MIN_S", default_value_t = 900)]
    pub txn_window_min_s: u64,

    /// An active qlog file holding a record older than this many seconds is
    /// sealed (at its next write, or within a second if its log is idle), so
    /// reclaim can reach it.
    #[arg(long, env = "QUEEN_QLOG_SEAL_AGE_S", default_value_t = 600)]
    pub seal_age_s: u64,

    /// A partition with no write for this many days (fractions allowed), no
    /// retained message, no dead letter and no live lease is deleted; 0
    /// keeps every partition. Partitions named by a Kafka partition number
    /// are always kept.
    #[arg(long, env = "PARTITION_CLEANUP_DAYS", default_value_t = 30.0, value_parser = days)]
    pub partition_cleanup_days: f64,

    /// The share of a sealed file's message bytes, in percent, that must be
    /// dead before reclaim rewrites it with only its live records; unset:
    /// any in a log of one queue, half in a shared log (QUEEN_QLOG_SHARDS).
    #[arg(long, env = "QUEEN_QLOG_COMPACT_MIN_DEAD_PCT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub compact_min_dead_pct: Option<u8>,

    /// The most qlog files kept open at once; past it the least recently
    /// used is closed and opened again when next needed. Unset: half the
    /// descriptor limit (raised at boot to its hard limit), at most 65536.
    #[arg(long, env = "QUEEN_QLOG_OPEN_FILES", value_parser = clap::value_parser!(u64).range(1..))]
    pub qlog_open_files: Option<u64>,

    /// The largest payload one message may carry, in bytes (4 MiB: the
    /// queen-mq client's suite pushes a JSON document of about 2 MB).
    #[arg(long, env = "QUEEN_MAX_PAYLOAD_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_payload_bytes: usize,

    /// The largest HTTP request body, in bytes.
    #[arg(long, env = "QUEEN_HTTP_MAX_BODY_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// HTTP connections open at once; more are closed as they arrive.
    #[arg(long, env = "QUEEN_HTTP_MAX_CONNECTIONS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub http_max_connections: u64,

    /// A request's headers must arrive whole within this many milliseconds of the request's start (a TLS handshake too).
    #[arg(long, env = "QUEEN_HTTP_HEADER_READ_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub http_header_read_timeout_ms: u64,

    /// A Kafka request begun must arrive whole within this many milliseconds (a TLS handshake too).
    #[arg(long, env = "QUEEN_KAFKA_REQUEST_READ_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub kafka_request_read_timeout_ms: u64,

    /// A Kafka connection with no request for this many milliseconds is closed (Kafka's connections.max.idle.ms).
    #[arg(long, env = "QUEEN_KAFKA_CONNECTIONS_MAX_IDLE_MS", default_value_t = 600_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub kafka_connections_max_idle_ms: u64,

    /// The decompressed bytes all Kafka produce requests in flight may hold together; one waits for its share.
    #[arg(long, env = "QUEEN_DECOMPRESS_BUDGET_BYTES", default_value_t = 256 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..))]
    pub decompress_budget_bytes: u64,

    /// The PEM certificate chain the TLS listeners present (QUEEN_KAFKA_TLS, QUEEN_HTTP_TLS).
    #[arg(long, env = "QUEEN_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of QUEEN_TLS_CERT.
    #[arg(long, env = "QUEEN_TLS_KEY")]
    pub tls_key: Option<PathBuf>,

    /// A PEM CA: when set, every TLS client must present a certificate it signed.
    #[arg(long, env = "QUEEN_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,

    /// Serve Kafka over TLS (security.protocol SSL, or SASL_SSL with SASL on).
    #[arg(long, env = "QUEEN_KAFKA_TLS", default_value_t = false, action = clap::ArgAction::Set)]
    pub kafka_tls: bool,

    /// Serve the HTTP API over TLS (HTTPS).
    #[arg(long, env = "QUEEN_HTTP_TLS", default_value_t = false, action = clap::ArgAction::Set)]
    pub http_tls: bool,

    /// The most items one push may carry.
    #[arg(long, env = "QUEEN_PUSH_MAX_ITEMS", default_value_t = 10_000)]
    pub push_max_items: usize,

    /// At this percentage of the data volume used, writes that grow storage answer 507 storage_full.
    #[arg(long, env = "QUEEN_STORAGE_FULL_PCT", default_value_t = 85.0)]
    pub storage_full_pct: f64,

    /// The AES-256-GCM key, 64 hex characters, for queues configured with encryptionEnabled.
    #[arg(long, env = "QUEEN_ENCRYPTION_KEY", hide_env_values = true)]
    pub encryption_key: Option<String>,

    /// An ephemeral queue created implicitly (never configured) is dropped once it has been empty and unused this long, in seconds.
    #[arg(long, env = "QUEEN_EPHEMERAL_IDLE_S", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub ephemeral_idle_s: u64,

    /// How long a message trace event (POST /api/v1/traces) is kept, in seconds.
    #[arg(long, env = "QUEEN_TRACE_RETENTION_S", default_value_t = 7 * 24 * 3600)]
    pub trace_retention_s: u64,

    /// Log filter, as tracing's EnvFilter reads it.
    #[arg(long, env = "QUEEN_LOG", default_value = "info")]
    pub log: String,

    /// Require a JWT on every request (but JWT_SKIP_PATHS).
    #[arg(long, env = "JWT_ENABLED", default_value_t = false, action = clap::ArgAction::Set)]
    pub jwt_enabled: bool,

    /// HS256, RS256, EdDSA, or auto (by the token's header: HS256 with JWT_SECRET, the others with JWT_PUBLIC_KEY).
    #[arg(long, env = "JWT_ALGORITHM", default_value = "auto")]
    pub jwt_algorithm: String,

    /// The shared secret for HS256.
    #[arg(long, env = "JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

    /// The PEM public key for RS256 or EdDSA.
    #[arg(long, env = "JWT_PUBLIC_KEY", hide_env_values = true)]
    pub jwt_public_key: Option<String>,

    /// The issuer a token must name, if set.
    #[arg(long, env = "JWT_ISSUER")]
    pub jwt_issuer: Option<String>,

    /// The audience a token must name, if set.
    #[arg(long, env = "JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,

    /// Seconds of clock skew allowed on exp and nbf.
    #[arg(long, env = "JWT_CLOCK_SKEW", default_value_t = 30)]
    pub jwt_clock_skew: u64,

    /// Paths served without a token, comma-separated.
    #[arg(long, env = "JWT_SKIP_PATHS", default_value = "/health,/metrics")]
    pub jwt_skip_paths: String,

    /// `open`: serve HTTP without authentication although the Kafka listener requires SASL (JWT_ENABLED=false with QUEEN_KAFKA_SASL_MECHANISMS set); without it such a node refuses to start.
    #[arg(long, env = "QUEEN_HTTP_AUTH", value_enum)]
    pub http_auth: Option<OpenOnPurpose>,

    /// `open`: serve Kafka without authentication although HTTP requires JWTs (JWT_ENABLED=true); without it the Kafka listener requires SASL OAUTHBEARER with the same tokens.
    #[arg(long, env = "QUEEN_KAFKA_AUTH", value_enum)]
    pub kafka_auth: Option<OpenOnPurpose>,
}

/// A number of days: finite and not negative.
fn days(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(d) if d.is_finite() && d >= 0.0 => Ok(d),
        _ => Err(format!("{text:?} is not a number of days (0 or more)")),
    }
}

/// A listener left without authentication on purpose, while the other
/// front end requires it (QUEEN_HTTP_AUTH, QUEEN_KAFKA_AUTH).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenOnPurpose {
    Open,
}
