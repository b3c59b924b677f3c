//! OffsetCommit: a committed offset is the group's Queen cursor on the
//! partition, so the group can continue over HTTP pop from there.

use super::by_topic;
use crate::broker::OffsetCommit;
use crate::names::topic_name;
use crate::{Broker, Facade};
use protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

pub async fn handle<B: Broker>(f: &Facade<B>, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let group = req.group_id.0.as_str().to_string();
    let refused = f.groups.may_commit(&group, req.member_id.as_str(), req.generation_id_or_member_epoch).err();
    let asked: Vec<(String, i32, i64)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| (t.name.0.as_str().to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    let codes: Vec<i16> = match refused {
        Some(e) => vec![e.code(); asked.len()],
        None => {
            let commits = asked
                .iter()
                .map(|(topic, partition, offset)| OffsetCommit {
                    topic: topic.clone(),
                    partition: *partition,
                    offset: *offset,
                })
                .collect();
            f.broker
                .commit_offsets(group, commits)
                .await
                .into_iter()
                .map(|r| r.map_or_else(|e| e.code(), |_| 0))
                .collect()
        }
    };
    let answers = asked.into_iter().zip(codes).map(|((topic, partition, _), code)| {
        (topic, OffsetCommitResponsePartition::default().with_partition_index(partition).with_error_code(code))
    });
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| OffsetCommitResponseTopic::default().with_name(topic_name(&t)).with_partitions(ps))
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
