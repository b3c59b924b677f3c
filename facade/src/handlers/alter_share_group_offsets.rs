//! AlterShareGroupOffsets (KIP-932, `kafka-share-groups.sh --reset-offsets`):
//! moves an empty share group's start offset on each partition named, as
//! an offset commit moves a group's cursor; what the group's members held
//! there is forgotten with it. A group id no group has yet becomes a share
//! group here, as in Kafka, so an admin can set where a share group starts
//! before its first member joins.

use crate::broker::OffsetCommit;
use crate::names::{str_bytes, uuid};
use crate::{Broker, Facade};
use protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use protocol::messages::{AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse};
use protocol::ResponseError;

pub async fn handle<B: Broker>(f: &Facade<B>, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse {
    let group = req.group_id.0.as_str();
    if let Err((error, why)) = empty_share_group_made_if_new(f, group).await {
        return AlterShareGroupOffsetsResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(str_bytes(&why)));
    }
    let commits: Vec<OffsetCommit> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| OffsetCommit {
                topic: t.topic_name.0.to_string(),
                partition: p.partition_index,
                offset: p.start_offset,
                metadata: String::new(),
            })
        })
        .collect();
    let mut answers = f.broker.commit_offsets(group.to_string(), commits).await.into_iter();
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let id = f.broker.topic(t.topic_name.0.as_str()).map_or([0; 16], |v| v.id);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let answer =
                        AlterShareGroupOffsetsResponsePartition::default().with_partition_index(p.partition_index);
                    match answers.next() {
                        Some(Ok(())) => answer,
                        Some(Err(e)) => {
                            answer.with_error_code(e.code()).with_error_message(Some(str_bytes(&e.to_string())))
                        }
                        None => answer.with_error_code(ResponseError::UnknownServerError.code()),
                    }
                })
                .collect();
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name.clone())
                .with_topic_id(uuid(id))
                .with_partitions(partitions)
        })
        .collect();
    AlterShareGroupOffsetsResponse::default().with_responses(responses)
}

/// Whether `group` is a share group with no members, making it one first
/// when no group of any kind has that id: no committed offsets, no classic
/// or consumer-protocol members. Another kind of group answers
/// GROUP_ID_NOT_FOUND, as Kafka does.
async fn empty_share_group_made_if_new<B: Broker>(f: &Facade<B>, group: &str) -> Result<(), (ResponseError, String)> {
    let share = f.broker.share_groups().iter().any(|g| g == group);
    let other_kind = f.broker.group_names().iter().any(|g| g == group)
        || f.groups.existing(group).is_some()
        || f.consumer_groups.existing(&*f.broker, group).await.is_some();
    if !share && !other_kind {
        if let Err(e) = f.broker.declare_share_group(group.to_string()).await {
            return Err((e.kafka(), format!("share group {group} could not be made: {e}")));
        }
    }
    super::share_group_describe::empty_share_group(f, group)
}
