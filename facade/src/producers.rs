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
    pub fn written(&self, topic: &str, partition: i32, batch: &ProducedBatch) {
        if batch.producer_id < 0 {
            return;
        }
        let end = batch.base_sequence.wrapping_add(batch.records.len() as i32);
        let mut next = self.next.lock().expect("sequences lock");
        let slot = next.entry((batch.producer_id, topic.to_string(), partition)).or_insert((batch.producer_epoch, end));
        if batch.producer_epoch > slot.0 || (batch.producer_epoch == slot.0 && end > slot.1) {
            *slot = (batch.producer_epoch, end);
        }
    }
}
