//! ShareGroupDescribe (KIP-932): each share group's state, epoch and
//! members with their assignments. A group the broker does not hold as a
//! share group answers GROUP_ID_NOT_FOUND; one with no members here is
//! Empty.

use crate::names::{str_bytes, topic_name, uuid};
use crate::{Broker, Facade};
use protocol::messages::share_group_describe_response::{Assignment, DescribedGroup, Member, TopicPartitions};
use protocol::messages::{ShareGroupDescribeRequest, ShareGroupDescribeResponse};
use protocol::ResponseError;

/// Kafka's name for its share assignor, which this one stands for.
const ASSIGNOR: &str = "simple";

/// Whether `group` is a share group with no members here, as changing its
/// offsets or deleting it needs; the error to answer otherwise.
pub fn empty_share_group<B: Broker>(f: &Facade<B>, group: &str) -> Result<(), (ResponseError, String)> {
    if !f.broker.share_groups().iter().any(|g| g == group) {
        return Err((ResponseError::GroupIdNotFound, format!("{group} is not a share group")));
    }
    if f.share_groups.has_members(group) {
        return Err((ResponseError::NonEmptyGroup, format!("share group {group} has members: stop them first")));
    }
    Ok(())
}

pub fn handle<B: Broker>(f: &Facade<B>, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let known = f.broker.share_groups();
    let groups = req
        .group_ids
        .iter()
        .map(|id| {
            let name = id.0.as_str();
            let described = DescribedGroup::default().with_group_id(id.clone()).with_assignor_name(str_bytes(ASSIGNOR));
            if !known.iter().any(|g| g == name) {
                let why = format!("{name} is not a share group");
                return described
                    .with_error_code(ResponseError::GroupIdNotFound.code())
                    .with_error_message(Some(str_bytes(&why)));
            }
            let (epoch, members) = f.share_groups.describe(name).unwrap_or_default();
            let members = members
                .into_iter()
                .map(|(member_id, m)| {
                    let topics = m
                        .assignment
                        .iter()
                        .map(|(id, ps)| {
                            let topic = f.broker.topic_by_id(*id).map(|t| t.name).unwrap_or_default();
                            TopicPartitions::default()
                                .with_topic_id(uuid(*id))
                                .with_topic_name(topic_name(&topic))
                                .with_partitions(ps.clone())
                        })
                        .collect();
                    Member::default()
                        .with_member_id(str_bytes(&member_id))
                        .with_rack_id(m.rack.as_deref().map(str_bytes))
                        .with_member_epoch(m.epoch)
                        .with_client_id(str_bytes(&m.client_id))
                        .with_client_host(str_bytes(&m.client_host))
                        .with_subscribed_topic_names(m.subscribed.iter().map(|n| topic_name(n)).collect())
                        .with_assignment(Assignment::default().with_topic_partitions(topics))
                })
                .collect();
            described
                .with_group_state(str_bytes(f.share_groups.state(name)))
                .with_group_epoch(epoch)
                .with_assignment_epoch(epoch)
                .with_members(members)
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}
