//! Which role each API needs, as the HTTP API's routes need them: reading
//! (metadata, fetch, offsets, descriptions) is `read-only`; producing,
//! consuming in a group, creating and configuring topics is `read-write`,
//! as pushing, popping and configuring a queue are; deleting topics,
//! records, groups and group offsets is `admin`, as the HTTP resource and
//! consumer-group routes are. A request the principal's role does not allow
//! is answered in its own layout with the authorization error a Kafka
//! broker gives: TOPIC_AUTHORIZATION_FAILED per topic or partition,
//! GROUP_AUTHORIZATION_FAILED for group APIs, CLUSTER_AUTHORIZATION_FAILED
//! for cluster resources.

use crate::names::{str_bytes, topic_name};
use crate::sasl::Role;
use protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use protocol::messages::create_topics_response::CreatableTopicResult;
use protocol::messages::delete_groups_response::DeletableGroupResult;
use protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
use protocol::messages::delete_topics_response::DeletableTopicResult;
use protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResourceResponse;
use protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use protocol::messages::txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
use protocol::messages::*;
use protocol::ResponseError;

const TOPIC: i16 = ResponseError::TopicAuthorizationFailed.code();
const GROUP: i16 = ResponseError::GroupAuthorizationFailed.code();
const CLUSTER: i16 = ResponseError::ClusterAuthorizationFailed.code();
const TXN: i16 = ResponseError::TransactionalIdAuthorizationFailed.code();
/// ConfigResource's type of a broker (4) as opposed to a topic (2).
const BROKER_RESOURCE: i8 = 4;

/// The least role `request` needs.
pub fn required_role(request: &RequestKind) -> Role {
    match request {
        RequestKind::Produce(_)
        | RequestKind::InitProducerId(_)
        | RequestKind::AddPartitionsToTxn(_)
        | RequestKind::AddOffsetsToTxn(_)
        | RequestKind::EndTxn(_)
        | RequestKind::TxnOffsetCommit(_)
        | RequestKind::JoinGroup(_)
        | RequestKind::SyncGroup(_)
        | RequestKind::Heartbeat(_)
        | RequestKind::LeaveGroup(_)
        | RequestKind::ConsumerGroupHeartbeat(_)
        | RequestKind::ShareGroupHeartbeat(_)
        | RequestKind::ShareFetch(_)
        | RequestKind::ShareAcknowledge(_)
        | RequestKind::AlterShareGroupOffsets(_)
        | RequestKind::OffsetCommit(_)
        | RequestKind::CreateTopics(_)
        | RequestKind::CreatePartitions(_)
        | RequestKind::AlterConfigs(_)
        | RequestKind::IncrementalAlterConfigs(_) => Role::ReadWrite,
        RequestKind::DeleteTopics(_)
        | RequestKind::DeleteRecords(_)
        | RequestKind::DeleteGroups(_)
        | RequestKind::OffsetDelete(_)
        | RequestKind::DeleteShareGroupOffsets(_) => Role::Admin,
        _ => Role::ReadOnly,
    }
}

/// The refusal of `request` in its own layout; None for an API that needs
/// no more than `read-only` (which every principal has).
pub fn denied(request: &RequestKind, version: i16) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::Produce(r) => ResponseKind::Produce(produce(r)),
        RequestKind::InitProducerId(_) => ResponseKind::InitProducerId(
            InitProducerIdResponse::default().with_error_code(CLUSTER).with_producer_id((-1).into()),
        ),
        RequestKind::AddPartitionsToTxn(r) => ResponseKind::AddPartitionsToTxn(add_partitions_to_txn(r, version, TXN)),
        RequestKind::AddOffsetsToTxn(_) => {
            ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(TXN))
        }
        RequestKind::EndTxn(_) => ResponseKind::EndTxn(EndTxnResponse::default().with_error_code(TXN)),
        RequestKind::TxnOffsetCommit(r) => ResponseKind::TxnOffsetCommit(txn_offset_commit(r, TXN)),
        RequestKind::JoinGroup(_) => {
            ResponseKind::JoinGroup(JoinGroupResponse::default().with_error_code(GROUP).with_generation_id(-1))
        }
        RequestKind::SyncGroup(_) => ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(GROUP)),
        RequestKind::Heartbeat(_) => ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(GROUP)),
        RequestKind::LeaveGroup(_) => ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_error_code(GROUP)),
        RequestKind::ConsumerGroupHeartbeat(_) => {
            ResponseKind::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse::default().with_error_code(GROUP))
        }
        RequestKind::ShareGroupHeartbeat(_) => {
            ResponseKind::ShareGroupHeartbeat(ShareGroupHeartbeatResponse::default().with_error_code(GROUP))
        }
        RequestKind::ShareFetch(_) => ResponseKind::ShareFetch(ShareFetchResponse::default().with_error_code(GROUP)),
        RequestKind::ShareAcknowledge(_) => {
            ResponseKind::ShareAcknowledge(ShareAcknowledgeResponse::default().with_error_code(GROUP))
        }
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(offset_commit(r, GROUP)),
        RequestKind::OffsetDelete(_) => {
            ResponseKind::OffsetDelete(OffsetDeleteResponse::default().with_error_code(GROUP))
        }
        RequestKind::AlterShareGroupOffsets(_) => {
            ResponseKind::AlterShareGroupOffsets(AlterShareGroupOffsetsResponse::default().with_error_code(GROUP))
        }
        RequestKind::DeleteShareGroupOffsets(_) => {
            ResponseKind::DeleteShareGroupOffsets(DeleteShareGroupOffsetsResponse::default().with_error_code(GROUP))
        }
        RequestKind::DeleteGroups(r) => ResponseKind::DeleteGroups(
            DeleteGroupsResponse::default().with_results(
                r.groups_names
                    .iter()
                    .map(|g| DeletableGroupResult::default().with_group_id(g.clone()).with_error_code(GROUP))
                    .collect(),
            ),
        ),
        RequestKind::CreateTopics(r) => ResponseKind::CreateTopics(
            CreateTopicsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        CreatableTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(TOPIC)
                            .with_num_partitions(-1)
                            .with_replication_factor(-1)
                    })
                    .collect(),
            ),
        ),
        RequestKind::CreatePartitions(r) => ResponseKind::CreatePartitions(
            CreatePartitionsResponse::default().with_results(
                r.topics
                    .iter()
                    .map(|t| CreatePartitionsTopicResult::default().with_name(t.name.clone()).with_error_code(TOPIC))
                    .collect(),
            ),
        ),
        RequestKind::DeleteTopics(r) => ResponseKind::DeleteTopics(delete_topics(r, version)),
        RequestKind::DeleteRecords(r) => ResponseKind::DeleteRecords(
            DeleteRecordsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        let partitions = t
                            .partitions
                            .iter()
                            .map(|p| {
                                DeleteRecordsPartitionResult::default()
                                    .with_partition_index(p.partition_index)
                                    .with_low_watermark(-1)
                                    .with_error_code(TOPIC)
                            })
                            .collect();
                        DeleteRecordsTopicResult::default().with_name(t.name.clone()).with_partitions(partitions)
                    })
                    .collect(),
            ),
        ),
        RequestKind::AlterConfigs(r) => ResponseKind::AlterConfigs(
            AlterConfigsResponse::default().with_responses(
                r.resources
                    .iter()
                    .map(|c| {
                        AlterConfigsResourceResponse::default()
                            .with_resource_type(c.resource_type)
                            .with_resource_name(c.resource_name.clone())
                            .with_error_code(config_code(c.resource_type))
                    })
                    .collect(),
            ),
        ),
        RequestKind::IncrementalAlterConfigs(r) => ResponseKind::IncrementalAlterConfigs(
            IncrementalAlterConfigsResponse::default().with_responses(
                r.resources
                    .iter()
                    .map(|c| {
                        IncrementalResourceResponse::default()
                            .with_resource_type(c.resource_type)
                            .with_resource_name(c.resource_name.clone())
                            .with_error_code(config_code(c.resource_type))
                    })
                    .collect(),
            ),
        ),
        _ => return None,
    })
}

fn config_code(resource_type: i8) -> i16 {
    if resource_type == BROKER_RESOURCE {
        CLUSTER
    } else {
        TOPIC
    }
}

fn produce(r: &ProduceRequest) -> ProduceResponse {
    let responses = r
        .topic_data
        .iter()
        .map(|t| {
            let partitions = t
                .partition_data
                .iter()
                .map(|p| {
                    PartitionProduceResponse::default().with_index(p.index).with_error_code(TOPIC).with_base_offset(-1)
                })
                .collect();
            TopicProduceResponse::default().with_name(t.name.clone()).with_partition_responses(partitions)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}

/// An OffsetCommit refused with `code` on every partition it names.
pub(super) fn offset_commit(r: &OffsetCommitRequest, code: i16) -> OffsetCommitResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

fn delete_topics(r: &DeleteTopicsRequest, version: i16) -> DeleteTopicsResponse {
    let refused = |name: Option<String>, id| {
        let answer = DeletableTopicResult::default()
            .with_name(name.as_deref().map(topic_name))
            .with_topic_id(id)
            .with_error_code(TOPIC);
        if version >= 5 {
            answer.with_error_message(Some(str_bytes("the principal's role may not delete topics")))
        } else {
            answer
        }
    };
    let responses = if version >= 6 {
        r.topics.iter().map(|t| refused(t.name.as_ref().map(|n| n.0.to_string()), t.topic_id)).collect()
    } else {
        r.topic_names.iter().map(|n| refused(Some(n.0.to_string()), Default::default())).collect()
    };
    DeleteTopicsResponse::default().with_responses(responses)
}

fn txn_topic_results(topics: &[AddPartitionsToTxnTopic], code: i16) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(code)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(partitions)
        })
        .collect()
}

/// Every asked partition of every transaction refused with `code`.
pub fn add_partitions_to_txn(r: &AddPartitionsToTxnRequest, version: i16, code: i16) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        return AddPartitionsToTxnResponse::default()
            .with_results_by_topic_v3_and_below(txn_topic_results(&r.v3_and_below_topics, code));
    }
    let results = r
        .transactions
        .iter()
        .map(|t| {
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id.clone())
                .with_topic_results(txn_topic_results(&t.topics, code))
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_error_code(code).with_results_by_transaction(results)
}

fn txn_offset_commit(r: &TxnOffsetCommitRequest, code: i16) -> TxnOffsetCommitResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            TxnOffsetCommitResponseTopic::default().with_name(topic_name(t.name.0.as_str())).with_partitions(partitions)
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}
