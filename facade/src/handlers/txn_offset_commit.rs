//! TxnOffsetCommit: offsets a consumer group commits if the producer's
//! transaction does; they become the group's cursors at the commit and are
//! dropped at an abort. From v3 the request names the consumer's group
//! generation and member, and a stale one is fenced (KIP-447), so a zombie
//! consumer-producer cannot commit over the group's new owner.

use super::by_topic;
use super::txn_errors;
use crate::broker::{OffsetCommit, TxnProducer};
use crate::names::topic_name;
use crate::{Broker, Facade};
use protocol::messages::txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
use protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

/// A fenced producer is told INVALID_PRODUCER_EPOCH in every version, as Kafka tells it.
const FENCED_SINCE: i16 = i16::MAX;

pub async fn handle<B: Broker>(f: &Facade<B>, req: TxnOffsetCommitRequest, version: i16) -> TxnOffsetCommitResponse {
    let group = req.group_id.0.as_str().to_string();
    let asked: Vec<OffsetCommit> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| OffsetCommit {
                topic: t.name.0.as_str().to_string(),
                partition: p.partition_index,
                offset: p.committed_offset,
                metadata: p.committed_metadata.as_deref().unwrap_or_default().to_string(),
            })
        })
        .collect();
    // Before v3 the request names no member: only the producer is checked.
    let fenced = match version >= 3 {
        true => f
            .groups
            .may_commit(&group, req.member_id.as_str(), req.group_instance_id.as_deref(), req.generation_id)
            .err(),
        false => None,
    };
    let codes: Vec<i16> = match fenced {
        Some(e) => vec![e.code(); asked.len()],
        None => {
            let producer = TxnProducer { id: req.producer_id.0, epoch: req.producer_epoch };
            let transactional_id = req.transactional_id.as_str().to_string();
            f.broker
                .txn_offset_commit(transactional_id, producer, group, asked.clone())
                .await
                .into_iter()
                .map(|r| r.map_or_else(|e| txn_errors::code(&e, version, FENCED_SINCE), |_| 0))
                .collect()
        }
    };
    let answers = asked.into_iter().zip(codes).map(|(c, code)| {
        (c.topic, TxnOffsetCommitResponsePartition::default().with_partition_index(c.partition).with_error_code(code))
    });
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| TxnOffsetCommitResponseTopic::default().with_name(topic_name(&t)).with_partitions(ps))
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}
