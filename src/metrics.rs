//! The node's Prometheus metrics, served at `/metrics`.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A clone shares every metric's value (prometheus-client's metrics are
/// handles) and the registry that renders them.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    pub entries_applied: Counter,
    pub messages_appended: Counter,
    pub duplicates: Counter,
    pub group_commits: Counter,
    pub qlog_bytes_written: Counter,
    /// Time spent writing and fdatasyncing group commits: its rate is the
    /// share of time the qlog's disk had a sync in flight.
    pub qlog_sync_seconds: Counter<f64, AtomicU64>,
    pub checkpoints: Counter,
    /// Partitions whose retention watermarks moved.
    pub partitions_retained: Counter,
    pub partitions_cleaned_up: Counter,
    pub qlog_files_reclaimed: Counter,
    pub qlog_files_rewritten: Counter,
    pub qlog_bytes_reclaimed: Counter,
    pub applied_index: Gauge,
    pub group_commit_seconds: Histogram,
    pub group_commit_entries: Histogram,
    /// How Kafka fetches sent stored batches: by sendfile, or read first.
    pub kafka_file_bytes: facade::file_range::FileBytesSent,
    /// Each raft group's state on this node, labelled by group, set when
    /// `/metrics` is read (`record_group`): the counters above sum every
    /// group's work, these tell the groups apart.
    group_applied: Family<GroupLabel, Gauge>,
    group_commit: Family<GroupLabel, Gauge>,
    group_term: Family<GroupLabel, Gauge>,
    group_leader: Family<GroupLabel, Gauge>,
    /// Rows each raft group's store holds in RAM, by keyspace
    /// (`record_store_rows`).
    store_rows: Family<GroupLabel, Gauge>,
}

type GroupLabel = Vec<(String, String)>;

/// One raft group's state as `/metrics` shows it.
pub struct GroupState {
    pub applied: u64,
    pub commit: u64,
    pub term: u64,
    /// The leader's node id; none while the group elects.
    pub leader: Option<u64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("queen");
        let m = Self {
            entries_applied: Counter::default(),
            messages_appended: Counter::default(),
            duplicates: Counter::default(),
            group_commits: Counter::default(),
            qlog_bytes_written: Counter::default(),
            qlog_sync_seconds: Counter::default(),
            checkpoints: Counter::default(),
            partitions_retained: Counter::default(),
            partitions_cleaned_up: Counter::default(),
            qlog_files_reclaimed: Counter::default(),
            qlog_files_rewritten: Counter::default(),
            qlog_bytes_reclaimed: Counter::default(),
            applied_index: Gauge::default(),
            group_commit_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            group_commit_entries: Histogram::new(exponential_buckets(1.0, 2.0, 14)),
            kafka_file_bytes: Default::default(),
            group_applied: Family::default(),
            group_commit: Family::default(),
            group_term: Family::default(),
            group_leader: Family::default(),
            store_rows: Family::default(),
            registry: Arc::default(),
        };
        let counters = [
            ("entries_applied", "Entries applied to the store", &m.entries_applied),
            ("messages_appended", "Messages appended to partitions", &m.messages_appended),
            ("push_duplicates", "Pushed messages dropped as transactionId duplicates", &m.duplicates),
            ("group_commits", "Group commits (one fsync per touched log)", &m.group_commits),
            ("qlog_bytes_written", "Bytes written to the qlog", &m.qlog_bytes_written),
            ("checkpoints", "Store checkpoints submitted", &m.checkpoints),
            (
                "partitions_retained",
                "Retention watermark moves, one per partition per Retain entry",
                &m.partitions_retained,
            ),
            (
                "partitions_cleaned_up",
                "Idle, empty partitions deleted (PARTITION_CLEANUP_DAYS)",
                &m.partitions_cleaned_up,
            ),
            ("qlog_files_reclaimed", "Sealed qlog files reclaim unlinked", &m.qlog_files_reclaimed),
            (
                "qlog_files_rewritten",
                "Sealed qlog files reclaim rewrote with only their live records",
                &m.qlog_files_rewritten,
            ),
            (
                "qlog_bytes_reclaimed",
                "Bytes reclaim freed: unlinked files and the records rewrites dropped",
                &m.qlog_bytes_reclaimed,
            ),
            (
                "kafka_fetch_sendfile_bytes",
                "Stored batch bytes Kafka fetches had the kernel send from qlog files (sendfile)",
                &m.kafka_file_bytes.by_sendfile,
            ),
            (
                "kafka_fetch_read_bytes",
                "Stored batch bytes Kafka fetches read into memory to send (TLS, small answers)",
                &m.kafka_file_bytes.read,
            ),
        ];
        for (name, help, counter) in counters {
            registry.register(name, help, counter.clone());
        }
        let sync_help = "Time spent writing and fdatasyncing group commits";
        registry.register("qlog_sync_seconds", sync_help, m.qlog_sync_seconds.clone());
        registry.register("applied_index", "Index of the last applied entry", m.applied_index.clone());
        let commit_help = "Time from a group commit's first planned command to its apply";
        registry.register("group_commit_seconds", commit_help, m.group_commit_seconds.clone());
        registry.register("group_commit_entries", "Entries per group commit", m.group_commit_entries.clone());
        let groups = [
            ("raft_group_applied_index", "Index of the last entry the raft group applied here", &m.group_applied),
            (
                "raft_group_commit_index",
                "Index of the last entry this node knows the raft group committed",
                &m.group_commit,
            ),
            ("raft_group_term", "The raft group's term as this node knows it", &m.group_term),
            ("raft_group_leader", "The node id of the raft group's leader, 0 while it elects", &m.group_leader),
        ];
        for (name, help, family) in groups {
            registry.register(name, help, family.clone());
        }
        let rows_help = "Rows a raft group's store holds in RAM, by keyspace: dedup and locator_spans grow with the messages stored, the others with live state";
        registry.register("store_rows", rows_help, m.store_rows.clone());
        Self { registry: Arc::new(registry), ..m }
    }
}

impl Metrics {
    /// Metrics for a further raft group of the node: the same counters and
    /// histograms, so `/metrics` counts every group's work, but an
    /// `applied_index` of its own, since each group's log has its own
    /// indexes; the node's is group 0's.
    pub fn for_another_group(&self) -> Self {
        Self { applied_index: Gauge::default(), ..self.clone() }
    }

    /// Sets raft group `group`'s gauges.
    pub fn record_group(&self, group: usize, state: &GroupState) {
        let label = vec![("group".to_string(), group.to_string())];
        let as_gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.group_applied.get_or_create(&label).set(as_gauge(state.applied));
        self.group_commit.get_or_create(&label).set(as_gauge(state.commit));
        self.group_term.get_or_create(&label).set(as_gauge(state.term));
        self.group_leader.get_or_create(&label).set(as_gauge(state.leader.unwrap_or(0)));
    }

    /// Sets raft group `group`'s store row gauges, one per keyspace.
    pub fn record_store_rows(&self, group: usize, rows: &[(&'static str, usize)]) {
        for (keyspace, n) in rows {
            let label = vec![("group".to_string(), group.to_string()), ("keyspace".to_string(), keyspace.to_string())];
            self.store_rows.get_or_create(&label).set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("metrics encode into a String");
        out
    }
}
