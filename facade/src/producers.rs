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

/// What the sequence check keeps of a batch once it is handed to the broker.
pub struct Written {
    pub topic: String,
    pub partition: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub count: usize,
}

impl Written {
    pub fn of(topic: &str, partition: i32, batch: &ProducedBatch) -> Self {
        Written {
            topic: topic.to_string(),
            partition,
            producer_id: batch.producer_id,
            producer_epoch: batch.producer_epoch,
            base_sequence: batch.base_sequence,
            count: batch.records.len(),
        }
    }
}

/// (producer id, topic, partition).
type ProducerPartition = (i64, String, i32);

/// Where a producer stands on one partition.
struct Position {
    epoch: i16,
    /// The next sequence expected.
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
    /// Whether the batch may be written.
    pub fn check(&self, topic: &str, partition: i32, batch: &ProducedBatch) -> Result<(), ResponseError> {
        if batch.producer_id < 0 {
            return Ok(());
        }
        let known = self.known.lock().expect("sequences lock");
        let Some(&Position { epoch, next: expected, .. }) =
            known.positions.get(&(batch.producer_id, topic.to_string(), partition))
        else {
            return Ok(());
        };
        if batch.producer_epoch < epoch {
            return Err(ResponseError::InvalidProducerEpoch);
        }
        let fresh_epoch = batch.producer_epoch > epoch;
        if (fresh_epoch && batch.base_sequence != 0) || (!fresh_epoch && batch.base_sequence > expected) {
            return Err(ResponseError::OutOfOrderSequenceNumber);
        }
        Ok(())
    }

    /// Records a written batch.
    pub fn written(&self, w: &Written) {
        if w.producer_id < 0 {
            return;
        }
        let end = w.base_sequence.wrapping_add(w.count as i32);
        let now = Instant::now();
        let mut known = self.known.lock().expect("sequences lock");
        if now.duration_since(known.last_sweep) >= SWEEP_EVERY {
            known.positions.retain(|_, p| now.duration_since(p.last_write) < PRODUCER_EXPIRY);
            known.last_sweep = now;
        }
        let slot = known.positions.entry((w.producer_id, w.topic.clone(), w.partition)).or_insert(Position {
            epoch: w.producer_epoch,
            next: end,
            last_write: now,
        });
        if w.producer_epoch > slot.epoch || (w.producer_epoch == slot.epoch && end > slot.next) {
            slot.epoch = w.producer_epoch;
            slot.next = end;
        }
        slot.last_write = now;
    }
}
