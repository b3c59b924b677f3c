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
pub mod clock;
pub(crate) mod codec;
pub mod config;
pub(crate) mod data_dir_lock;
pub(crate) mod disk_gate;
pub mod due_work;
pub(crate) mod encryption;
pub(crate) mod ephemeral;
pub mod fatal;
pub(crate) mod fd_limit;
pub mod http;
pub(crate) mod internal_kv;
pub(crate) mod iso_time;
pub(crate) mod jwt;
pub mod kafka;
pub mod local_cluster;
pub mod log_boot;
pub mod log_id;
pub mod message;
pub(crate) mod message_view;
pub mod metrics;
pub mod node;
pub mod planner;
pub mod qlog;
pub(crate) mod queue_options;
pub(crate) mod reader;
pub mod reclaim;
pub mod recovery;
pub mod replicate;
pub mod retention_scan;
pub(crate) mod state_view;
pub mod storage;
pub mod store;
pub(crate) mod test_hooks;
pub mod tls;
