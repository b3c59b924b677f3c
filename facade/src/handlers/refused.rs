//! The APIs Queen answers but does not serve yet (`protocol::versions::
//! REFUSED`): Kafka transactions and the KIP-848 group protocol. Each gets
//! UNSUPPORTED_VERSION in its own layout, where the client looks for an error.

use crate::names::topic_name;
use protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use protocol::messages::txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
use protocol::messages::{
    AddOffsetsToTxnResponse, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ConsumerGroupHeartbeatResponse,
    EndTxnResponse, RequestKind, ResponseKind, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use protocol::{ResponseError, StrBytes};

const CODE: i16 = ResponseError::UnsupportedVersion.code();

/// The refusal of `request`, if it is one of the refused APIs.
pub fn answer(request: &RequestKind, version: i16) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::AddPartitionsToTxn(r) => ResponseKind::AddPartitionsToTxn(add_partitions(r, version)),
        RequestKind::AddOffsetsToTxn(_) => {
            ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(CODE))
        }
        RequestKind::EndTxn(_) => ResponseKind::EndTxn(EndTxnResponse::default().with_error_code(CODE)),
        RequestKind::TxnOffsetCommit(r) => ResponseKind::TxnOffsetCommit(txn_offset_commit(r)),
        RequestKind::ConsumerGroupHeartbeat(_) => ResponseKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatResponse::default().with_error_code(CODE).with_error_message(Some(
                StrBytes::from_static_str(
                    "the consumer group protocol of KIP-848 is not supported yet; use group.protocol=classic",
                ),
            )),
        ),
        _ => return None,
    })
}

fn topic_results(topics: &[AddPartitionsToTxnTopic]) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(CODE)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(partitions)
        })
        .collect()
}

fn add_partitions(r: &AddPartitionsToTxnRequest, version: i16) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        return AddPartitionsToTxnResponse::default()
            .with_results_by_topic_v3_and_below(topic_results(&r.v3_and_below_topics));
    }
    let results = r
        .transactions
        .iter()
        .map(|t| {
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id.clone())
                .with_topic_results(topic_results(&t.topics))
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_error_code(CODE).with_results_by_transaction(results)
}

fn txn_offset_commit(r: &TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
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
                        .with_error_code(CODE)
                })
                .collect();
            TxnOffsetCommitResponseTopic::default().with_name(topic_name(t.name.0.as_str())).with_partitions(partitions)
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}
