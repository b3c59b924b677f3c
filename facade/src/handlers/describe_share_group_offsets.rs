//! DescribeShareGroupOffsets (KIP-932): each share-partition's start
//! offset, the first record the group has not finished with (its Queen
//! cursor). Asked for no topics, a group answers every partition it read.

use crate::names::{str_bytes, topic_name, uuid};
use crate::{Broker, Facade};
use protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use protocol::messages::{DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse};
use protocol::ResponseError;

pub fn handle<B: Broker>(f: &Facade<B>, req: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse {
    let known = f.broker.share_groups();
    let groups = req
        .groups
        .iter()
        .map(|g| {
            let name = g.group_id.0.as_str();
            let answer = DescribeShareGroupOffsetsResponseGroup::default().with_group_id(g.group_id.clone());
            if !known.iter().any(|k| k == name) {
                let why = format!("{name} is not a share group");
                return answer
                    .with_error_code(ResponseError::GroupIdNotFound.code())
                    .with_error_message(Some(str_bytes(&why)));
            }
            let asked: Vec<(String, Vec<i32>)> = match &g.topics {
                Some(topics) => topics.iter().map(|t| (t.topic_name.0.to_string(), t.partitions.clone())).collect(),
                None => super::by_topic(f.broker.group_partitions(name)),
            };
            let topics = asked
                .into_iter()
                .map(|(topic, partitions)| {
                    let id = f.broker.topic(&topic).map_or([0; 16], |t| t.id);
                    let partitions = partitions
                        .into_iter()
                        .map(|p| {
                            let answer = DescribeShareGroupOffsetsResponsePartition::default()
                                .with_partition_index(p)
                                .with_leader_epoch(0);
                            match f.broker.share_start_offset(name, &topic, p) {
                                Ok(start) => answer.with_start_offset(start.unwrap_or(-1)),
                                Err(e) => answer.with_start_offset(-1).with_error_code(e.code()),
                            }
                        })
                        .collect();
                    DescribeShareGroupOffsetsResponseTopic::default()
                        .with_topic_name(topic_name(&topic))
                        .with_topic_id(uuid(id))
                        .with_partitions(partitions)
                })
                .collect();
            answer.with_topics(topics)
        })
        .collect();
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}
