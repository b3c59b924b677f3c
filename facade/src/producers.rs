//! Idempotent producers: the sequence numbers each (producer, partition) has
//! written, so a batch that skips ahead or comes from a fenced epoch is
//! refused. A retried batch passes: the broker's dedup rows (which survive
//! restarts) answer it with the offsets it got the first time. The
//! sequences themselves live in memory; after a restart the first batch of
//! each producer is taken as it comes. Every client restart brings a new
//! producer id, so a producer's sequences are forgotten once it has written
//! nothing for `PRODUCER_EXPIRY` (Kafka's `producer.id.expiration.ms`
//! default); its next batch is then taken as it comes, as after a restart.

use protocol::records::ProducedBatch;
use protocol::ResponseError;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a producer's sequences outlive its last write.
const PRODUCER_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// How often the expired ones are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// (producer id, topic, partition).
type ProducerPartition = (i64, String, i32);

/// Where a producer stands on one partition.
struct Position {
    epoch: i16,
    /// The next sequence expected: past the last batch let through.
    next: i32,
    last_write: Instant,
}

struct Known {
    positions: HashMap<ProducerPartition, Position>,
    last_sweep: Instant,
}

pub struct Sequences {
    known: Mutex<Known>,
}

impl Default for Sequences {
    fn default() -> Self {
        Self { known: Mutex::new(Known { positions: HashMap::new(), last_sweep: Instant::now() }) }
    }
}

impl Sequences {
    /// Whether the batch may be written; if so, the producer's next
    /// expected sequence moves past it. A connection hands batches to the
    /// broker in the order they arrive and sends the next before the first
    /// is durable, so the check counts what it let through, not what is
    /// written. A batch let through whose write then fails leaves a gap its
    /// producer fills by retrying: a retried sequence is always let through.
    pub fn accept(&self, topic: &str, partition: i32, batch: &ProducedBatch) -> Result<(), ResponseError> {
        if batch.producer_id < 0 {
            return Ok(());
        }
        let end = batch.base_sequence.wrapping_add(batch.records.len() as i32);
        let now = Instant::now();
        let mut known = self.known.lock().expect("sequences lock");
        if now.duration_since(known.last_sweep) >= SWEEP_EVERY {
            known.positions.retain(|_, p| now.duration_since(p.last_write) < PRODUCER_EXPIRY);
            known.last_sweep = now;
        }
        let key = (batch.producer_id, topic.to_string(), partition);
        let Some(slot) = known.positions.get_mut(&key) else {
            known.positions.insert(key, Position { epoch: batch.producer_epoch, next: end, last_write: now });
            return Ok(());
        };
        if batch.producer_epoch < slot.epoch {
            return Err(ResponseError::InvalidProducerEpoch);
        }
        let fresh_epoch = batch.producer_epoch > slot.epoch;
        if (fresh_epoch && batch.base_sequence != 0) || (!fresh_epoch && batch.base_sequence > slot.next) {
            return Err(ResponseError::OutOfOrderSequenceNumber);
        }
        if fresh_epoch || end > slot.next {
            slot.epoch = batch.producer_epoch;
            slot.next = end;
        }
        slot.last_write = now;
        Ok(())
    }
}
