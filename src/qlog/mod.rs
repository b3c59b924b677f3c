//! The qlog: per-queue log files that are both the write-ahead log and the
//! message store (see `docs/storage.md` for the format byte by byte).

pub(crate) mod batch_places;
pub(crate) mod boot_scan;
pub(crate) mod entry_index;
pub mod entry_record;
pub mod files;
pub(crate) mod index_file;
pub(crate) mod kafka_batch;
pub mod layout;
pub mod message_record;
pub(crate) mod pending_sync;
pub(crate) mod queue_log;
pub mod record;
pub mod retired;
pub(crate) mod scrub;
pub mod segment;
pub mod sync_ledger;
pub(crate) mod write_buffers;
pub mod writer;
