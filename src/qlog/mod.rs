//! The qlog: per-queue log files that are both the write-ahead log and the
//! message store (see `docs/storage.md` for the format byte by byte).

pub mod batch_places;
pub mod boot_scan;
pub mod entry_index;
pub mod entry_record;
pub mod files;
pub mod index_file;
pub mod kafka_batch;
pub mod layout;
pub mod message_record;
pub mod pending_sync;
pub mod queue_log;
pub mod record;
pub mod retired;
pub mod scrub;
pub mod segment;
pub mod sync_ledger;
pub mod write_buffers;
pub mod writer;
