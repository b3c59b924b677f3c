//! The error codes the transaction APIs answer. Kafka 2.7 (KIP-588) gave a
//! fenced producer an error of its own, PRODUCER_FENCED, from the API
//! versions it bumped for that; a client asking an older version is told
//! INVALID_PRODUCER_EPOCH, which it reads the same way.

use crate::broker::BrokerError;
use protocol::ResponseError;

/// The code answering `e` to a request of `version`, where `fenced_since` is
/// the first version of that API that knows PRODUCER_FENCED.
/// A coordinator that cannot write now answers as Kafka's does, so the
/// client finds the coordinator again (NOT_COORDINATOR: this node no
/// longer leads) or retries (COORDINATOR_NOT_AVAILABLE: no majority yet, a
/// write whose outcome is not known; COORDINATOR_LOAD_IN_PROGRESS, a cluster
/// not yet reading transactions, asks the same one again).
pub fn code(e: &BrokerError, version: i16, fenced_since: i16) -> i16 {
    match e {
        BrokerError::ProducerFenced if version < fenced_since => ResponseError::InvalidProducerEpoch.code(),
        BrokerError::NotLeader(_) | BrokerError::ShuttingDown => ResponseError::NotCoordinator.code(),
        BrokerError::TimedOut(_) | BrokerError::Unavailable(_) => ResponseError::CoordinatorNotAvailable.code(),
        other => other.code(),
    }
}
