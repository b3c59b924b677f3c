//! The UUID-shaped ids the HTTP API shows for partitions and messages,
//! derived from Queen's numeric ids so they are stable and need no storage.

pub fn partition_uuid(queue: u64, partition: u64) -> String {
    format!("{:08x}-{:04x}-4000-8000-{:012x}", queue >> 16, queue & 0xffff, partition)
}

pub use crate::iso_time::iso_time;

pub fn message_uuid(partition: u64, offset: u64) -> String {
    format!("{:08x}-{:04x}-4000-9000-{:012x}", partition >> 16, partition & 0xffff, offset)
}

/// The number a framed pop answer names a partition by, when both ids fit.
pub fn packed_partition_id(queue: u64, partition: u64) -> Option<u64> {
    (queue <= u32::MAX as u64 && partition <= u32::MAX as u64).then_some((queue << 32) | partition)
}

/// (queue id, partition id) of a packed partition id.
pub fn unpack_partition_id(id: u64) -> (u64, u64) {
    (id >> 32, id & u32::MAX as u64)
}

/// The (queue id, partition id) a `partitionId` names, if it is one of ours.
pub fn parse_partition_uuid(text: &str) -> Option<(u64, u64)> {
    // A framed pop answer names partitions by a packed number instead.
    if let Ok(packed) = text.parse::<u64>() {
        return Some(unpack_partition_id(packed));
    }
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

/// A stored message's value as JSON: [`payload_json`], and JSON null for a
/// null value (a Kafka tombstone), which is not the empty string.
pub fn value_json(message: &crate::message::Message) -> serde_json::Value {
    message.value.as_deref().map_or(serde_json::Value::Null, payload_json)
}

/// What a Kafka producer sent beside the value, for a message that came
/// through the Kafka facade: its key, headers (as text, null for a null
/// header value) and CreateTime.
/// Added to a popped or fetched message as `kafka`; absent for HTTP pushes.
pub fn kafka_fields(message: &crate::message::Message) -> Option<(&'static str, serde_json::Value)> {
    let timestamp_ms = message.timestamp_ms?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let headers: serde_json::Map<String, serde_json::Value> =
        message.headers.iter().map(|(k, v)| (k.clone(), v.as_deref().map(|v| text(v)).into())).collect();
    Some((
        "kafka",
        serde_json::json!({"key": message.key.as_deref().map(text), "headers": headers, "timestamp": timestamp_ms}),
    ))
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
