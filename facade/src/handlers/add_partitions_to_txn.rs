//! AddPartitionsToTxn (v0-3, the client's form): the partitions a
//! transactional producer is about to write join its open transaction, which
//! begins with the first of them. Each partition is answered on its own.

use super::by_topic;
use super::txn_errors;
use crate::broker::TxnProducer;
use crate::{Broker, Facade};
use protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};

/// The first version that answers PRODUCER_FENCED.
const FENCED_SINCE: i16 = 2;

pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: AddPartitionsToTxnRequest,
    version: i16,
) -> AddPartitionsToTxnResponse {
    let asked: Vec<(String, i32)> = req
        .v3_and_below_topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.0.as_str().to_string(), *p)))
        .collect();
    let producer = TxnProducer { id: req.v3_and_below_producer_id.0, epoch: req.v3_and_below_producer_epoch };
    let transactional_id = req.v3_and_below_transactional_id.as_str().to_string();
    let added = f.broker.add_partitions_to_txn(transactional_id, producer, asked.clone()).await;
    let answers = asked.into_iter().zip(added).map(|((topic, partition), added)| {
        let code = added.map_or_else(|e| txn_errors::code(&e, version, FENCED_SINCE), |_| 0);
        let result = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(partition)
            .with_partition_error_code(code);
        (topic, result)
    });
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(crate::names::topic_name(&t))
                .with_results_by_partition(ps)
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics)
}
