//! ConsumerGroupDescribe (KIP-848): each consumer-protocol group's state,
//! epochs, assignor and members with their assignments and targets. A
//! group that is not one here answers GROUP_ID_NOT_FOUND, and the admin
//! client then describes it as a classic group.

use crate::groups::TopicPartition;
use crate::names::{str_bytes, topic_name, uuid};
use crate::{Broker, Facade};
use protocol::messages::consumer_group_describe_response::{Assignment, DescribedGroup, Member, TopicPartitions};
use protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
use protocol::ResponseError;
use std::collections::{BTreeMap, BTreeSet};

/// The member type of a consumer (ConsumerGroupDescribe v1).
const CONSUMER: i8 = 1;

fn assignment<B: Broker>(f: &Facade<B>, partitions: &BTreeSet<TopicPartition>) -> Assignment {
    let mut by_topic: BTreeMap<[u8; 16], Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        by_topic.entry(*topic).or_default().push(*partition);
    }
    let topics = by_topic
        .into_iter()
        .map(|(id, ps)| {
            let name = f.broker.topic_by_id(id).map(|t| t.name).unwrap_or_default();
            TopicPartitions::default().with_topic_id(uuid(id)).with_topic_name(topic_name(&name)).with_partitions(ps)
        })
        .collect();
    Assignment::default().with_topic_partitions(topics)
}

pub async fn handle<B: Broker>(f: &Facade<B>, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let mut groups = Vec::with_capacity(req.group_ids.len());
    for id in &req.group_ids {
        let described = DescribedGroup::default().with_group_id(id.clone());
        let Some(g) = f.consumer_groups.existing(&*f.broker, id.0.as_str()).await else {
            let why = format!("{} is not a consumer-protocol group", id.0.as_str());
            groups.push(
                described
                    .with_error_code(ResponseError::GroupIdNotFound.code())
                    .with_error_message(Some(str_bytes(&why))),
            );
            continue;
        };
        let members = g
            .members
            .values()
            .map(|m| {
                Member::default()
                    .with_member_id(str_bytes(&m.id))
                    .with_instance_id(m.instance_id.as_deref().map(str_bytes))
                    .with_rack_id(m.rack_id.as_deref().map(str_bytes))
                    .with_member_epoch(m.epoch)
                    .with_client_id(str_bytes(&m.client_id))
                    .with_client_host(str_bytes(&m.client_host))
                    .with_subscribed_topic_names(m.subscribed_names.iter().map(|n| topic_name(n)).collect())
                    .with_subscribed_topic_regex(m.subscribed_regex.as_deref().map(str_bytes))
                    .with_assignment(assignment(f, &m.assigned))
                    .with_target_assignment(assignment(f, &g.target.get(&m.id).cloned().unwrap_or_default()))
                    .with_member_type(CONSUMER)
            })
            .collect();
        groups.push(
            described
                .with_group_state(str_bytes(g.state()))
                .with_group_epoch(g.epoch)
                .with_assignment_epoch(g.assignment_epoch)
                .with_assignor_name(str_bytes(g.assignor()))
                .with_members(members),
        );
    }
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}
