//! AddOffsetsToTxn: the producer's open transaction will commit offsets
//! for a consumer group (`sendOffsetsToTransaction`), which its
//! TxnOffsetCommit then names.

use super::txn_errors;
use crate::broker::TxnProducer;
use crate::{Broker, Facade};
use protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

/// The first version that answers PRODUCER_FENCED.
const FENCED_SINCE: i16 = 2;

pub async fn handle<B: Broker>(f: &Facade<B>, req: AddOffsetsToTxnRequest, version: i16) -> AddOffsetsToTxnResponse {
    let producer = TxnProducer { id: req.producer_id.0, epoch: req.producer_epoch };
    let added = f
        .broker
        .add_offsets_to_txn(req.transactional_id.as_str().to_string(), producer, req.group_id.0.as_str().to_string())
        .await;
    AddOffsetsToTxnResponse::default()
        .with_error_code(added.map_or_else(|e| txn_errors::code(&e, version, FENCED_SINCE), |_| 0))
}
