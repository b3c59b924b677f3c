//! OffsetCommit: a committed offset is the group's Queen cursor on the
//! partition, so the group can continue over HTTP pop from there.

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
    let mut topics: Vec<OffsetCommitResponseTopic> = Vec::new();
    for ((topic, partition, _), code) in asked.into_iter().zip(codes) {
        let answer = OffsetCommitResponsePartition::default().with_partition_index(partition).with_error_code(code);
        match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partitions.push(answer),
            None => topics
                .push(OffsetCommitResponseTopic::default().with_name(topic_name(&topic)).with_partitions(vec![answer])),
        }
    }
    OffsetCommitResponse::default().with_topics(topics)
}
