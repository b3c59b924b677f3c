//! The UUID-shaped ids the HTTP API shows for partitions and messages,
//! derived from Queen's numeric ids so they are stable and need no storage.

pub fn partition_uuid(queue: u64, partition: u64) -> String {
    format!("{:08x}-{:04x}-4000-8000-{:012x}", queue >> 16, queue & 0xffff, partition)
}

pub use crate::iso_time::iso_time;

pub fn message_uuid(partition: u64, offset: u64) -> String {
    format!("{:08x}-{:04x}-4000-9000-{:012x}", partition >> 16, partition & 0xffff, offset)
}

/// The (queue id, partition id) a `partitionId` names, if it is one of ours.
pub fn parse_partition_uuid(text: &str) -> Option<(u64, u64)> {
    let parts: Vec<&str> = text.split('-').collect();
    let [high, low, "4000", "8000", partition] = parts.as_slice() else { return None };
    let queue = (u64::from_str_radix(high, 16).ok()? << 16) | u64::from_str_radix(low, 16).ok()?;
    Some((queue, u64::from_str_radix(partition, 16).ok()?))
}

/// A stored HTTP payload as JSON; bytes that are not JSON (a Kafka record,
/// say) come back as a string.
pub fn payload_json(value: &[u8]) -> serde_json::Value {
    serde_json::from_slice(value)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(value).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_uuid_parses_back() {
        for (q, p) in [(1, 1), (70_000, 5), (u32::MAX as u64, 1 << 40)] {
            assert_eq!(parse_partition_uuid(&partition_uuid(q, p)), Some((q, p)));
        }
        assert_eq!(parse_partition_uuid("not-a-uuid"), None);
        assert_eq!(parse_partition_uuid(&message_uuid(1, 2)), None);
    }
}
