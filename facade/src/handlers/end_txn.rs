//! EndTxn: commits or aborts the producer's open transaction. The markers,
//! the aborted stretches and the transaction's offsets are written in one
//! entry, so the answer comes once all of it is durable (and, on a cluster,
//! committed): there is no prepared state for a client to wait out.

use super::txn_errors;
use crate::broker::TxnProducer;
use crate::{Broker, Facade};
use protocol::messages::{EndTxnRequest, EndTxnResponse};

/// The first version that answers PRODUCER_FENCED.
const FENCED_SINCE: i16 = 2;

pub async fn handle<B: Broker>(f: &Facade<B>, req: EndTxnRequest, version: i16) -> EndTxnResponse {
    let producer = TxnProducer { id: req.producer_id.0, epoch: req.producer_epoch };
    let ended = f.broker.end_txn(req.transactional_id.as_str().to_string(), producer, req.committed).await;
    EndTxnResponse::default().with_error_code(ended.map_or_else(|e| txn_errors::code(&e, version, FENCED_SINCE), |_| 0))
}
