//! The rule for queue and partition names over HTTP: 1 to 255 bytes, no
//! control character (NUL, newline, ...) and no `/`. A name with a control
//! character cannot be typed into a log line, a path or a Kafka client, and
//! one with `/` could not be told from a route's own separator; both are
//! refused when a queue or partition would be created. Kafka sees the queues
//! whose names are also Kafka topic names (`docs/kafka.md`, Names).

/// The longest name, in bytes: of a queue, partition, consumer group,
/// lock or trace.
pub const MAX_NAME_BYTES: usize = 255;

/// What a name must be, as error messages say it.
pub const RULE: &str = "1 to 255 bytes with no control character and no '/'";

pub fn is_valid(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.chars().any(|c| c.is_control() || c == '/')
}
