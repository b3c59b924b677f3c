//! TxnOffsetCommit: offsets a consumer group commits if the producer's
//! transaction does; they become the group's cursors at the commit and are
//! dropped at an abort. From v3 the request names the consumer's group
//! generation and member, and a stale one is fenced (KIP-447), so a zombie
//! consumer-producer cannot commit over the group's new owner.

use super::by_topic;
use super::commit_fence::CommitFence;
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
    let fence = match version >= 3 {
        true => Some(
            CommitFence::check(f, &group, req.member_id.as_str(), req.group_instance_id.as_deref(), req.generation_id)
                .await,
        ),
        false => None,
    };
    let mut codes: Vec<Option<i16>> = asked
        .iter()
        .map(|c| fence.as_ref().and_then(|fence| fence.refusal(f, &c.topic, c.partition)).map(|e| e.code()))
        .collect();
    let commits: Vec<OffsetCommit> =
        asked.iter().zip(&codes).filter(|(_, code)| code.is_none()).map(|(c, _)| c.clone()).collect();
    if !commits.is_empty() {
        let producer = TxnProducer { id: req.producer_id.0, epoch: req.producer_epoch };
        let transactional_id = req.transactional_id.as_str().to_string();
        let mut written = f.broker.txn_offset_commit(transactional_id, producer, group, commits).await.into_iter();
        for code in codes.iter_mut().filter(|code| code.is_none()) {
            *code = Some(
                written.next().map_or(0, |r| r.map_or_else(|e| txn_errors::code(&e, version, FENCED_SINCE), |_| 0)),
            );
        }
    }
    let answers = asked.into_iter().zip(codes).map(|(c, code)| {
        let code = code.unwrap_or(0);
        (c.topic, TxnOffsetCommitResponsePartition::default().with_partition_index(c.partition).with_error_code(code))
    });
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| TxnOffsetCommitResponseTopic::default().with_name(topic_name(&t)).with_partitions(ps))
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}
