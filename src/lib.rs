//! Queen: a message broker that speaks the Kafka wire protocol and a native
//! HTTP queue API over one storage engine.
//!
//! A write flows one way: a front end (`http`) turns a request into a
//! command; the `planner` checks it against the state and decides an entry of
//! effects; the replicator (`replicate`) makes the entry durable in the
//! `qlog`, the per-queue logs that are both the write-ahead log and the
//! message store; `planner::apply` executes it on the `store`; and only then
//! is the client answered. `recovery` brings a node back after a crash.

/// Every binary built on the broker (the server, the benches, the tests)
/// allocates with mimalloc: the sequencer frees, batch after batch, buffers
/// that the front ends' threads allocated, which glibc's per-thread arenas
/// handle poorly (consolidation and cross-arena frees showed as a seventh of
/// the sequencer's time).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub(crate) mod apply_watch;
pub(crate) mod auth_policy;
pub(crate) mod clock;
pub(crate) mod codec;
pub(crate) mod config;
pub(crate) mod data_dir_lock;
pub(crate) mod disk_gate;
pub(crate) mod due_work;
pub(crate) mod encryption;
pub(crate) mod ephemeral;
pub(crate) mod fatal;
pub(crate) mod fd_limit;
pub(crate) mod http;
pub(crate) mod internal_kv;
pub(crate) mod iso_time;
pub(crate) mod jwt;
pub(crate) mod kafka;
pub(crate) mod local_cluster;
pub(crate) mod log_boot;
pub(crate) mod log_id;
pub(crate) mod message;
pub(crate) mod message_view;
pub(crate) mod metrics;
pub(crate) mod node;
pub(crate) mod placement;
pub(crate) mod planner;
pub(crate) mod qlog;
pub(crate) mod queue_options;
pub(crate) mod reader;
pub(crate) mod reclaim;
pub(crate) mod recovery;
pub(crate) mod replicate;
pub(crate) mod retention_scan;
pub mod seams;
pub(crate) mod serve;
pub(crate) mod share_groups;
pub(crate) mod state_view;
pub(crate) mod storage;
pub(crate) mod store;
pub(crate) mod test_hooks;
pub(crate) mod tls;

// The surface: what the binary runs. The tests, simulators and benchmarks
// reach further in through `seams`, and nothing else is public.
pub use config::Settings;
pub use local_cluster::{run as run_local_cluster, ClusterArgs};
pub use node::Node;
pub use serve::serve;
