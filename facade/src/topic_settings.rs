//! Kafka's topic settings as Queen reads them, for CreateTopics and
//! AlterConfigs alike: a name Kafka does not know is INVALID_CONFIG, as
//! Kafka answers it; `retention.ms` is the queue's retention.

use protocol::ResponseError;

pub const RETENTION_MS: &str = "retention.ms";

/// Every topic-level setting Kafka defines. CreateTopics accepts them all
/// (Queen applies `retention.ms`; DescribeConfigs shows what holds for the
/// rest); a name outside this list is refused.
const KAFKA_TOPIC_SETTINGS: [&str; 36] = [
    "cleanup.policy",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "local.retention.bytes",
    "local.retention.ms",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.downconversion.enable",
    "message.format.version",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "preallocate",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    "remote.storage.enable",
    "retention.bytes",
    RETENTION_MS,
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
];

/// A refused setting: INVALID_CONFIG with the reason.
pub type Refusal = (ResponseError, String);

pub fn invalid(message: String) -> Refusal {
    (ResponseError::InvalidConfig, message)
}

/// Refuses a name Kafka does not define for topics.
pub fn check_known(name: &str) -> Result<(), Refusal> {
    match KAFKA_TOPIC_SETTINGS.contains(&name) {
        true => Ok(()),
        false => Err(invalid(format!("unknown topic config name: {name}"))),
    }
}

/// A `retention.ms` value: milliseconds, -1 (or any negative) for none.
pub fn retention_ms(value: Option<&str>) -> Result<i64, Refusal> {
    value
        .and_then(|v| v.parse::<i64>().ok())
        .ok_or_else(|| invalid(format!("{RETENTION_MS} takes milliseconds, not {value:?}")))
}
