//! A share group's configs, Kafka's group configs of KIP-932, kept as the
//! JSON object of the group's row in the internal KV namespace
//! `queen-share-groups` (keys are Kafka's config names). The row's presence
//! is what makes a group a share group: its pops take records one by one,
//! over HTTP and Kafka alike.

use super::kv::row_key;
use super::overlay::Overlay;
use crate::internal_kv::SHARE_GROUPS;
use crate::store::Store;
use serde_json::{Map, Value};

pub const AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
pub const LOCK_DURATION_MS: &str = "share.record.lock.duration.ms";
pub const DELIVERY_COUNT_LIMIT: &str = "share.delivery.count.limit";
pub const MAX_RECORD_LOCKS: &str = "share.partition.max.record.locks";
pub const ISOLATION_LEVEL: &str = "share.isolation.level";

/// Every config a share group has, with Kafka's defaults.
pub const DEFAULTS: [(&str, &str); 5] = [
    (AUTO_OFFSET_RESET, "latest"),
    (LOCK_DURATION_MS, "30000"),
    (DELIVERY_COUNT_LIMIT, "5"),
    (MAX_RECORD_LOCKS, "2000"),
    (ISOLATION_LEVEL, "read_uncommitted"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareConfig {
    /// Where a partition the group never read starts: its log start
    /// (`earliest`) or its end (`latest`).
    pub earliest: bool,
    /// How long a record stays acquired by one member.
    pub lock_us: i64,
    /// A record given back this many times goes to the dead-letter queue.
    pub delivery_limit: u32,
    /// The most records of one partition held at once.
    pub max_locks: usize,
    /// Records of open Kafka transactions wait until they commit.
    pub read_committed: bool,
}

impl Default for ShareConfig {
    fn default() -> Self {
        Self::from_json("{}")
    }
}

/// Why a config value is refused, or `None` when it is acceptable.
pub fn refusal(name: &str, value: &str) -> Option<String> {
    let whole = |lo: i64, hi: i64| match value.parse::<i64>() {
        Ok(n) if (lo..=hi).contains(&n) => None,
        _ => Some(format!("{name} must be a whole number from {lo} to {hi}, not {value:?}")),
    };
    match name {
        AUTO_OFFSET_RESET => (!matches!(value, "earliest" | "latest"))
            .then(|| format!("{name} must be earliest or latest, not {value:?}")),
        LOCK_DURATION_MS => whole(1000, 3_600_000),
        DELIVERY_COUNT_LIMIT => whole(2, 10),
        MAX_RECORD_LOCKS => whole(100, 10_000),
        ISOLATION_LEVEL => (!matches!(value, "read_committed" | "read_uncommitted"))
            .then(|| format!("{name} must be read_committed or read_uncommitted, not {value:?}")),
        _ => Some(format!("{name} is not a share group config")),
    }
}

impl ShareConfig {
    /// The configs a group's row holds; those it does not hold (or holds
    /// out of range) are the defaults. Values are checked when written.
    pub fn from_json(text: &str) -> Self {
        let row: Map<String, Value> = serde_json::from_str(text).unwrap_or_default();
        let get = |name: &str| -> String {
            let given = row.get(name).and_then(Value::as_str).filter(|v| refusal(name, v).is_none());
            given
                .unwrap_or_else(|| DEFAULTS.iter().find(|(n, _)| *n == name).expect("every config has a default").1)
                .to_string()
        };
        let number = |name: &str| get(name).parse::<i64>().expect("checked by refusal");
        Self {
            earliest: get(AUTO_OFFSET_RESET) == "earliest",
            lock_us: number(LOCK_DURATION_MS) * 1000,
            delivery_limit: number(DELIVERY_COUNT_LIMIT) as u32,
            max_locks: number(MAX_RECORD_LOCKS) as usize,
            read_committed: get(ISOLATION_LEVEL) == "read_committed",
        }
    }

    /// Group `group`'s configs as the planned entries leave them, if it is
    /// a share group.
    pub fn of(store: &Store, overlay: &Overlay, now_us: i64, group: &str) -> Option<Self> {
        let row = overlay.kv_row(store, &row_key(SHARE_GROUPS, group)).filter(|r| r.live(now_us))?;
        Some(Self::from_json(&row.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_holds_what_was_set_and_the_defaults_fill_the_rest() {
        let c =
            ShareConfig::from_json(r#"{"share.auto.offset.reset":"earliest","share.record.lock.duration.ms":"5000"}"#);
        assert!(c.earliest);
        assert_eq!((c.lock_us, c.delivery_limit, c.max_locks, c.read_committed), (5_000_000, 5, 2000, false));
        assert_eq!(ShareConfig::default().lock_us, 30_000_000);
    }

    #[test]
    fn values_out_of_range_are_refused_with_their_bounds() {
        assert_eq!(refusal(DELIVERY_COUNT_LIMIT, "3"), None);
        assert!(refusal(DELIVERY_COUNT_LIMIT, "11").unwrap().contains("from 2 to 10"));
        assert!(refusal(AUTO_OFFSET_RESET, "by_duration:PT1H").is_some());
        assert!(refusal("share.heartbeat.interval.ms", "5").unwrap().contains("not a share group config"));
    }
}
