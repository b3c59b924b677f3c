//! OffsetCommit: a committed offset is the group's Queen cursor on the
//! partition, so the group can continue over HTTP pop from there; the
//! commit's metadata string is kept with it for OffsetFetch.

use super::by_topic;
use super::commit_fence::CommitFence;
use crate::broker::OffsetCommit;
use crate::names::topic_name;
use crate::{Broker, Facade};
use protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use protocol::ResponseError;

/// Kafka's `offset.metadata.max.bytes` default: a longer metadata string
/// is refused with OFFSET_METADATA_TOO_LARGE.
const OFFSET_METADATA_MAX_BYTES: usize = 4096;

pub async fn handle<B: Broker>(f: &Facade<B>, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let group = req.group_id.0.as_str().to_string();
    let fence = CommitFence::check(
        f,
        &group,
        req.member_id.as_str(),
        req.group_instance_id.as_deref(),
        req.generation_id_or_member_epoch,
    )
    .await;
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
    let mut codes: Vec<i16> = asked
        .iter()
        .map(|c| match fence.refusal(f, &c.topic, c.partition) {
            Some(e) => e.code(),
            None if c.metadata.len() > OFFSET_METADATA_MAX_BYTES => ResponseError::OffsetMetadataTooLarge.code(),
            None => 0,
        })
        .collect();
    let commits: Vec<OffsetCommit> =
        asked.iter().zip(&codes).filter(|(_, code)| **code == 0).map(|(c, _)| c.clone()).collect();
    if !commits.is_empty() {
        let mut written = f.broker.commit_offsets(group, commits).await.into_iter();
        for code in codes.iter_mut().filter(|code| **code == 0) {
            *code = written.next().map_or(0, |r| r.map_or_else(|e| e.coordinator_code(), |_| 0));
        }
    }
    let answers = asked.into_iter().zip(codes).map(|(c, code)| {
        (c.topic, OffsetCommitResponsePartition::default().with_partition_index(c.partition).with_error_code(code))
    });
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| OffsetCommitResponseTopic::default().with_name(topic_name(&t)).with_partitions(ps))
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
