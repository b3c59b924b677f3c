//! The UUID-shaped ids the HTTP API shows for partitions and messages,
//! derived from Queen's numeric ids so they are stable and need no storage.

pub fn partition_uuid(queue: u64, partition: u64) -> String {
    format!("{:08x}-{:04x}-4000-8000-{:012x}", queue >> 16, queue & 0xffff, partition)
}

pub fn message_uuid(partition: u64, offset: u64) -> String {
    format!("{:08x}-{:04x}-4000-9000-{:012x}", partition >> 16, partition & 0xffff, offset)
}

/// A time as the API spells it: UTC, microseconds, `Z`.
pub fn iso_time(us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(us).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
