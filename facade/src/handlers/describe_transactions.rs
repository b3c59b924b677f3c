//! DescribeTransactions: each asked transactional id's producer, state,
//! timeout and open partitions (`kafka-transactions.sh describe`).

use super::by_topic;
use crate::names::{str_bytes, topic_name};
use crate::{Broker, Facade};
use protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use protocol::messages::{DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId};
use protocol::ResponseError;

pub fn handle<B: Broker>(f: &Facade<B>, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let known = f.broker.transactions();
    let states = req
        .transactional_ids
        .into_iter()
        .map(|id| {
            let answer = TransactionState::default().with_transactional_id(id.clone());
            let Some(txn) = known.iter().find(|t| t.transactional_id == id.as_str()) else {
                return answer
                    .with_error_code(ResponseError::TransactionalIdNotFound.code())
                    .with_producer_id(ProducerId(-1));
            };
            let topics = by_topic(txn.partitions.iter().map(|(t, p)| (t.clone(), *p)))
                .into_iter()
                .map(|(t, ps)| TopicData::default().with_topic(topic_name(&t)).with_partitions(ps))
                .collect();
            answer
                .with_transaction_state(str_bytes(txn.state))
                .with_transaction_timeout_ms(txn.timeout_ms)
                .with_transaction_start_time_ms(txn.started_ms)
                .with_producer_id(ProducerId(txn.producer.id))
                .with_producer_epoch(txn.producer.epoch)
                .with_topics(topics)
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}
