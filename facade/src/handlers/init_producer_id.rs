//! InitProducerId. Without a transactional id: a fresh producer id for an
//! idempotent producer, drawn durably so no id repeats across restarts (one
//! bumping its epoch after an error keeps its id, KIP-360). With one: the
//! transaction coordinator's producer for that id, its epoch bumped, so the
//! previous incarnation is fenced and whatever it left open is aborted.

use super::txn_errors;
use crate::broker::TxnProducer;
use crate::{Broker, Facade};
use protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use protocol::ResponseError;

/// The first version that answers PRODUCER_FENCED.
const FENCED_SINCE: i16 = 4;

pub async fn handle<B: Broker>(f: &Facade<B>, req: InitProducerIdRequest, version: i16) -> InitProducerIdResponse {
    let answer = InitProducerIdResponse::default();
    let refuse = |code: i16| InitProducerIdResponse::default().with_error_code(code).with_producer_id(ProducerId(-1));
    let named = (req.producer_id.0 >= 0 && req.producer_epoch >= 0)
        .then_some(TxnProducer { id: req.producer_id.0, epoch: req.producer_epoch });
    if let Some(transactional_id) = req.transactional_id {
        let timeout = req.transaction_timeout_ms;
        if timeout <= 0 || timeout > f.config.transaction_max_timeout_ms {
            return refuse(ResponseError::InvalidTransactionTimeout.code());
        }
        return match f.broker.init_transactional(transactional_id.to_string(), timeout, named).await {
            Ok(p) => answer.with_producer_id(ProducerId(p.id)).with_producer_epoch(p.epoch),
            Err(e) => {
                tracing::debug!(transactional_id = transactional_id.as_str(), error = %e, "InitProducerId refused");
                refuse(txn_errors::code(&e, version, FENCED_SINCE))
            }
        };
    }
    if let Some(p) = named {
        return answer.with_producer_id(ProducerId(p.id)).with_producer_epoch(p.epoch.wrapping_add(1).max(0));
    }
    match f.broker.new_producer_id().await {
        Ok(id) => answer.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Err(e) => refuse(e.code()),
    }
}
