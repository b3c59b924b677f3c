//! Kafka's topic settings as Queen reads them, for CreateTopics and
//! AlterConfigs alike: a name Kafka does not know is INVALID_CONFIG, as
//! Kafka answers it; `retention.ms` is the queue's retention,
//! `max.message.bytes` the largest record batch a produce may write to it,
//! and `message.timestamp.type` whose clock its records' timestamps are.

use protocol::ResponseError;

pub const RETENTION_MS: &str = "retention.ms";
pub const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
pub const MESSAGE_TIMESTAMP_TYPE: &str = "message.timestamp.type";

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
    MAX_MESSAGE_BYTES,
    "message.downconversion.enable",
    "message.format.version",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms",
    MESSAGE_TIMESTAMP_TYPE,
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

/// The settings of a topic that Queen applies, as a CreateTopics or an
/// AlterConfigs names them; what is not named stays as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicSettings {
    /// `retention.ms`: milliseconds, negative (Kafka's -1) for none.
    pub retention_ms: Option<i64>,
    /// `max.message.bytes`: the largest record batch, as produced.
    pub max_message_bytes: Option<u32>,
    /// `message.timestamp.type`: true for LogAppendTime (the broker's clock
    /// at the append), false for CreateTime (the producer's).
    pub log_append_time: Option<bool>,
}

impl TopicSettings {
    /// Takes one named setting: Ok(true) when it is one Queen applies (now
    /// held here), Ok(false) for another Kafka setting, or why not.
    pub fn take(&mut self, name: &str, value: Option<&str>) -> Result<bool, Refusal> {
        check_known(name)?;
        match name {
            RETENTION_MS => self.retention_ms = Some(retention_ms(value)?),
            MAX_MESSAGE_BYTES => self.max_message_bytes = Some(max_message_bytes(value)?),
            MESSAGE_TIMESTAMP_TYPE => self.log_append_time = Some(log_append_time(value)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A `retention.ms` value: milliseconds, -1 (or any negative) for none.
fn retention_ms(value: Option<&str>) -> Result<i64, Refusal> {
    value
        .and_then(|v| v.parse::<i64>().ok())
        .ok_or_else(|| invalid(format!("{RETENTION_MS} takes milliseconds, not {value:?}")))
}

/// A `message.timestamp.type` value: `LogAppendTime` or `CreateTime`.
fn log_append_time(value: Option<&str>) -> Result<bool, Refusal> {
    match value {
        Some("LogAppendTime") => Ok(true),
        Some("CreateTime") => Ok(false),
        _ => Err(invalid(format!("{MESSAGE_TIMESTAMP_TYPE} is CreateTime or LogAppendTime, not {value:?}"))),
    }
}

/// A `max.message.bytes` value: bytes, 0 to 2^31-1 as Kafka takes it.
fn max_message_bytes(value: Option<&str>) -> Result<u32, Refusal> {
    value
        .and_then(|v| v.parse::<i32>().ok())
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| invalid(format!("{MAX_MESSAGE_BYTES} takes bytes from 0 to 2147483647, not {value:?}")))
}
