//! ListTransactions: every transactional id the coordinator knows, filtered
//! by state, producer id and (v1) how long the transaction has been open
//! (`kafka-transactions.sh list` and `find-hanging`).

use crate::names::{str_bytes, transactional_id};
use crate::{Broker, Facade};
use protocol::messages::list_transactions_response::TransactionState;
use protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use std::time::{SystemTime, UNIX_EPOCH};

const STATES: [&str; 6] = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"];

pub fn handle<B: Broker>(f: &Facade<B>, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let unknown: Vec<_> = req.state_filters.iter().filter(|s| !STATES.contains(&s.as_str())).cloned().collect();
    let states = f
        .broker
        .transactions()
        .into_iter()
        .filter(|t| req.state_filters.is_empty() || req.state_filters.iter().any(|s| s.as_str() == t.state))
        .filter(|t| req.producer_id_filters.is_empty() || req.producer_id_filters.contains(&ProducerId(t.producer.id)))
        // A duration filter keeps transactions open longer than it.
        .filter(|t| req.duration_filter < 0 || (t.started_ms >= 0 && now_ms - t.started_ms > req.duration_filter))
        .map(|t| {
            TransactionState::default()
                .with_transactional_id(transactional_id(&t.transactional_id))
                .with_producer_id(ProducerId(t.producer.id))
                .with_transaction_state(str_bytes(t.state))
        })
        .collect();
    ListTransactionsResponse::default().with_unknown_state_filters(unknown).with_transaction_states(states)
}
