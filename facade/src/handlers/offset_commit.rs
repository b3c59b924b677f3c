//! OffsetCommit: a committed offset is the group's Queen cursor on the
//! partition, so the group can continue over HTTP pop from there; the
//! commit's metadata string is kept with it for OffsetFetch.

use super::by_topic;
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
    let instance = req.group_instance_id.as_deref();
    let generation = req.generation_id_or_member_epoch;
    // A consumer-protocol group's member commits at its member epoch, and
    // no older than the epoch it was given each partition at.
    let (refused, given_at) =
        match f.consumer_groups.may_commit(&*f.broker, &group, req.member_id.as_str(), generation).await {
            Some(Ok(given_at)) => (None, given_at),
            Some(Err(e)) => (Some(e), Default::default()),
            None => {
                (f.groups.may_commit(&group, req.member_id.as_str(), instance, generation).err(), Default::default())
            }
        };
    let stale = |topic: &str, partition: i32| {
        !given_at.is_empty()
            && f.broker.topic(topic).is_some_and(|t| given_at.get(&(t.id, partition)).is_some_and(|e| generation < *e))
    };
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
        .map(|c| match refused {
            Some(e) => e.code(),
            None if stale(&c.topic, c.partition) => ResponseError::StaleMemberEpoch.code(),
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
