//! A queue's options: what `POST /api/v1/configure` sends, merged over the
//! defaults, stored as given (camelCase JSON) and read through typed getters.

use serde_json::{json, Map, Value};

/// The defaults the queen-mq client sends in full with every configure.
pub fn defaults() -> Map<String, Value> {
    let v = json!({
        "leaseTime": 300,
        "retryLimit": 3,
        "retryDelay": 0,
        "dlqAfterMaxRetries": true,
        "priority": 0,
        "delayedProcessing": 0,
        "windowBuffer": 0,
        "maxSize": 0,
        "retentionSeconds": 0,
        "completedRetentionSeconds": 0,
        "encryptionEnabled": false,
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("a JSON object literal"),
    }
}

/// The option a Kafka topic's `max.message.bytes` is stored as; absent
/// unless set (CreateTopics, AlterConfigs, or a configure that names it).
pub const KAFKA_MAX_MESSAGE_BYTES: &str = "kafkaMaxMessageBytes";
/// The option a Kafka topic's `message.timestamp.type` is stored as: `true`
/// for LogAppendTime; absent (or false) for CreateTime.
pub const KAFKA_LOG_APPEND_TIME: &str = "kafkaLogAppendTime";

/// snake_case → camelCase, as the client converts its keys.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for (i, part) in key.split('_').enumerate() {
        if i == 0 {
            out.push_str(part);
        } else {
            let mut chars = part.chars();
            if let Some(c) = chars.next() {
                out.extend(c.to_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    out
}

/// The options of a configure call, over `base`, keys in camelCase.
pub fn merge(base: Map<String, Value>, given: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base;
    for (k, v) in given {
        out.insert(camel(k), v.clone());
    }
    out
}

/// Typed reads of a queue's stored options.
pub struct QueueOptions(Map<String, Value>);

impl QueueOptions {
    pub fn parse(stored: &str) -> Self {
        match serde_json::from_str(stored) {
            Ok(Value::Object(m)) => Self(m),
            _ => Self(defaults()),
        }
    }

    fn num(&self, key: &str, default: f64) -> f64 {
        self.0.get(key).and_then(Value::as_f64).unwrap_or(default)
    }

    pub fn lease_time_us(&self) -> i64 {
        (self.num("leaseTime", 300.0).max(1.0) * 1e6) as i64
    }

    pub fn retry_limit(&self) -> u32 {
        self.num("retryLimit", 3.0).max(0.0) as u32
    }

    /// The pause before a failed message is delivered again, in milliseconds.
    pub fn retry_delay_us(&self) -> i64 {
        (self.num("retryDelay", 0.0).max(0.0) * 1e3) as i64
    }

    pub fn delayed_processing_us(&self) -> i64 {
        (self.num("delayedProcessing", 0.0).max(0.0) * 1e6) as i64
    }

    pub fn window_buffer_us(&self) -> i64 {
        (self.num("windowBuffer", 0.0).max(0.0) * 1e6) as i64
    }

    /// Whether a message out of retries is kept in the dead-letter queue
    /// (else it is dropped as done).
    pub fn dead_letter_after_retries(&self) -> bool {
        self.0.get("dlqAfterMaxRetries").and_then(Value::as_bool).unwrap_or(true)
    }

    /// The most messages the queue holds unfinished in queue mode; 0: no limit.
    pub fn max_size(&self) -> u64 {
        self.num("maxSize", 0.0).max(0.0) as u64
    }

    /// Where the queue stands among those a pop by namespace or task may
    /// take from: higher first.
    pub fn priority(&self) -> i64 {
        self.num("priority", 0.0) as i64
    }

    /// Whether payloads are sealed at rest (`encryption.rs`).
    pub fn encryption_enabled(&self) -> bool {
        self.0.get("encryptionEnabled").and_then(Value::as_bool).unwrap_or(false)
    }

    /// How long messages are kept, in seconds; 0 keeps them for good.
    pub fn retention_seconds(&self) -> i64 {
        self.num("retentionSeconds", 0.0).max(0.0) as i64
    }

    /// How long messages every group has completed are kept, in seconds;
    /// 0 keeps them for `retentionSeconds` (or for good).
    pub fn completed_retention_seconds(&self) -> i64 {
        self.num("completedRetentionSeconds", 0.0).max(0.0) as i64
    }

    /// The largest Kafka record batch a produce writes to the queue, in
    /// bytes as produced (the topic's `max.message.bytes`); none: the node's.
    pub fn kafka_max_message_bytes(&self) -> Option<usize> {
        self.0.get(KAFKA_MAX_MESSAGE_BYTES).and_then(Value::as_u64).map(|v| v as usize)
    }

    /// Whether a Kafka produce's records take the append time as their
    /// timestamp (the topic's `message.timestamp.type=LogAppendTime`).
    pub fn kafka_log_append_time(&self) -> bool {
        self.0.get(KAFKA_LOG_APPEND_TIME).and_then(Value::as_bool).unwrap_or(false)
    }

    pub fn as_json(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_keys_are_stored_in_camel_case_over_the_defaults() {
        let given = json!({"lease_time": 5, "retryLimit": 1, "dlq_after_max_retries": true});
        let m = merge(defaults(), given.as_object().unwrap());
        let o = QueueOptions(m);
        assert_eq!(o.lease_time_us(), 5_000_000);
        assert_eq!(o.retry_limit(), 1);
        assert_eq!(o.as_json()["dlqAfterMaxRetries"], json!(true));
        assert_eq!(o.as_json()["maxSize"], json!(0));
    }
}
