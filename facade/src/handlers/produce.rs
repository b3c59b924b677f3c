//! Produce: every batch of the request becomes one planner push, written and
//! fsynced together; acks=1 and acks=-1 both answer once the push is durable
//! (on one node they are the same promise), acks=0 answers nothing. The
//! handler answers `Reply::Pending` once the push is handed to the planner,
//! so the connection reads the client's next request while this one is made
//! durable (`connection.rs`). A transactional produce's batches land only in
//! partitions its transaction added (`Broker::produce`).

use super::{by_topic, Reply};
use crate::broker::{BrokerError, PartitionBatch};
use crate::names::topic_name;
use crate::{topics, Broker, Facade};
use protocol::decompress::{any_compressed, Allowance};
use protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};
use protocol::records::{decode_produced, largest_batch_bytes};
use protocol::ResponseError;

/// `producer`: the authenticated token's subject, stamped on every record.
pub async fn handle<B: Broker>(f: &Facade<B>, req: ProduceRequest, version: i16, producer: Option<String>) -> Reply {
    let transactional_id = req.transactional_id.as_ref().map(|t| t.as_str().to_string());
    // What the request's compressed batches expand to, at most
    // `max_request_bytes` all together, is held from the budget all
    // requests share until the request is answered.
    let compressed = req.topic_data.iter().flat_map(|t| &t.partition_data).any(|p| match &p.records {
        Some(records) => any_compressed(records),
        None => false,
    });
    let mut reservation = match compressed {
        true => Some(f.config.decompress_budget.reserve(f.config.max_request_bytes).await),
        false => None,
    };
    let allowance = Allowance::new(reservation.as_ref().map_or(usize::MAX, |r| r.bytes()));
    // (topic, partition, error or the index of its batch in `batches`).
    let mut slots: Vec<(String, i32, Result<usize, ResponseError>)> = Vec::new();
    let mut batches: Vec<PartitionBatch> = Vec::new();
    for topic in &req.topic_data {
        let name = topic.name.0.as_str().to_string();
        // Each partition's batch is checked before the topic is resolved: a
        // produce refused for every partition creates no topic.
        let checked: Vec<(i32, Result<PartitionBatch, ResponseError>)> = topic
            .partition_data
            .iter()
            .map(|p| {
                let batch = batch_of(f, &name, p.index, p.records.clone(), &allowance, &producer, &transactional_id);
                (p.index, batch)
            })
            .collect();
        let writable = checked.iter().any(|(_, b)| b.is_ok());
        let resolved = topics::resolve(f, &name, writable).await;
        for (index, batch) in checked {
            let slot = match (&resolved, batch) {
                (_, Err(e)) => Err(e),
                (Err(e), _) => Err(e.kafka()),
                (Ok(t), _) if index < 0 || index as u32 >= t.partitions => Err(ResponseError::UnknownTopicOrPartition),
                (Ok(_), Ok(b)) => {
                    batches.push(b);
                    Ok(batches.len() - 1)
                }
            };
            slots.push((name.clone(), index, slot));
        }
    }
    if let Some(reservation) = &mut reservation {
        reservation.keep(allowance.used());
    }
    let answers = f.broker.produce(batches).await;
    if req.acks == 0 {
        return Reply::Pending(Box::pin(async move {
            answers.await;
            drop(reservation);
            Reply::Silent
        }));
    }
    Reply::Pending(Box::pin(async move {
        let results = answers.await;
        drop(reservation);
        let answers = slots.into_iter().map(|(topic, partition, slot)| {
            let answer = PartitionProduceResponse::default().with_index(partition);
            let answer = match slot.and_then(|at| results[at].clone().map_err(|e| produce_error(&e, version))) {
                Ok(p) if version >= 5 => answer
                    .with_base_offset(p.base_offset)
                    .with_log_append_time_ms(p.log_append_time_ms)
                    .with_log_start_offset(p.log_start),
                Ok(p) if version >= 2 => {
                    answer.with_base_offset(p.base_offset).with_log_append_time_ms(p.log_append_time_ms)
                }
                Ok(p) => answer.with_base_offset(p.base_offset),
                Err(e) => answer.with_error_code(e.code()).with_base_offset(-1),
            };
            (topic, answer)
        });
        let responses = by_topic(answers)
            .into_iter()
            .map(|(t, ps)| TopicProduceResponse::default().with_name(topic_name(&t)).with_partition_responses(ps))
            .collect();
        Reply::Answer(Box::new(ResponseKind::Produce(ProduceResponse::default().with_responses(responses))))
    }))
}

/// What a refused batch is answered, as Kafka answers a produce: a fenced
/// transactional producer INVALID_PRODUCER_EPOCH, a batch for a partition
/// its transaction did not add INVALID_TXN_STATE (TRANSACTION_ABORTABLE from
/// v11, which the client answers by aborting).
fn produce_error(e: &BrokerError, version: i16) -> ResponseError {
    match e {
        BrokerError::ProducerFenced => ResponseError::InvalidProducerEpoch,
        BrokerError::InvalidTxnState(_) if version >= 11 => ResponseError::TransactionAbortable,
        other => other.kafka(),
    }
}

/// The partition's records as one batch to write, checked against the
/// broker's limits. Idempotence is decided where the batch is planned.
/// A request carries one batch per partition (more are merged: they arrive
/// together and are written together).
fn batch_of<B: Broker>(
    f: &Facade<B>,
    topic: &str,
    partition: i32,
    records: Option<bytes::Bytes>,
    allowance: &Allowance,
    producer: &Option<String>,
    transactional_id: &Option<String>,
) -> Result<PartitionBatch, ResponseError> {
    let Some(records) = records else { return Err(ResponseError::CorruptMessage) };
    f.broker.admit(topic, largest_batch_bytes(&records)).map_err(|e| e.kafka())?;
    let decoded = decode_produced(records, allowance).map_err(|e| {
        tracing::debug!(topic, partition, error = %e, "produce refused");
        ResponseError::CorruptMessage
    })?;
    let wires = decoded.iter().map(|b| b.wire.clone()).collect();
    let mut decoded = decoded.into_iter();
    let Some(mut batch) = decoded.next() else { return Err(ResponseError::CorruptMessage) };
    for more in decoded {
        batch.records.extend(more.records);
    }
    // A transaction's batches come with its transactional id, and only they.
    if batch.transactional != transactional_id.is_some() {
        return Err(ResponseError::InvalidRequest);
    }
    let (producer_sub, transactional_id) = (producer.clone(), transactional_id.clone());
    Ok(PartitionBatch { topic: topic.to_string(), partition, batch, wires, producer_sub, transactional_id })
}
