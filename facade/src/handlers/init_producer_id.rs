//! InitProducerId: a fresh producer id for an idempotent producer, drawn
//! durably so no id repeats across restarts. A transactional id is refused:
//! Kafka transactions are not supported yet (docs/kafka.md).

use crate::{Broker, Facade};
use protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use protocol::ResponseError;

pub async fn handle<B: Broker>(f: &Facade<B>, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let answer = InitProducerIdResponse::default();
    if req.transactional_id.is_some() {
        return answer
            .with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code())
            .with_producer_id(ProducerId(-1));
    }
    // A producer bumping its epoch (KIP-360) keeps its id with the next epoch.
    if req.producer_id.0 >= 0 && req.producer_epoch >= 0 {
        return answer.with_producer_id(req.producer_id).with_producer_epoch(req.producer_epoch.wrapping_add(1).max(0));
    }
    match f.broker.new_producer_id().await {
        Ok(id) => answer.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Err(e) => answer.with_error_code(e.code()).with_producer_id(ProducerId(-1)),
    }
}
