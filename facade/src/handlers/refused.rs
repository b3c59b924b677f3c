//! The APIs Queen answers but does not serve (`protocol::versions::
//! REFUSED`): AddPartitionsToTxn's v4+ (the brokers' batched verification
//! form). Each gets UNSUPPORTED_VERSION in its own layout, where the client
//! looks for an error.

use protocol::messages::{RequestKind, ResponseKind};
use protocol::ResponseError;

const CODE: i16 = ResponseError::UnsupportedVersion.code();

/// The refusal of `request`, if it is one of the refused APIs.
pub fn answer(request: &RequestKind, version: i16) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(super::authorize::add_partitions_to_txn(r, version, CODE))
        }
        _ => return None,
    })
}
