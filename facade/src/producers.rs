//! Idempotent producers: the sequence numbers each (producer, partition) has
//! written, so a batch that skips ahead or comes from a fenced epoch is
//! refused. A retried batch passes: the broker's dedup rows (which survive
//! restarts) answer it with the offsets it got the first time. The
//! sequences themselves live in memory; after a restart the first batch of
//! each producer is taken as it comes.

use protocol::records::ProducedBatch;
use protocol::ResponseError;
use std::collections::HashMap;
use std::sync::Mutex;

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

#[derive(Default)]
pub struct Sequences {
    /// → (epoch, the next sequence expected).
    next: Mutex<HashMap<ProducerPartition, (i16, i32)>>,
}

impl Sequences {
    /// Whether the batch may be written.
    pub fn check(&self, topic: &str, partition: i32, batch: &ProducedBatch) -> Result<(), ResponseError> {
        if batch.producer_id < 0 {
            return Ok(());
        }
        let next = self.next.lock().expect("sequences lock");
        let Some(&(epoch, expected)) = next.get(&(batch.producer_id, topic.to_string(), partition)) else {
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
        let mut next = self.next.lock().expect("sequences lock");
        let slot = next.entry((w.producer_id, w.topic.clone(), w.partition)).or_insert((w.producer_epoch, end));
        if w.producer_epoch > slot.0 || (w.producer_epoch == slot.0 && end > slot.1) {
            *slot = (w.producer_epoch, end);
        }
    }
}
