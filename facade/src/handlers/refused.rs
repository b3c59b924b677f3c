//! The APIs Queen answers but does not serve yet (`protocol::versions::
//! REFUSED`): the KIP-848 group protocol, and AddPartitionsToTxn's v4+
//! (the brokers' batched verification form). Each gets UNSUPPORTED_VERSION
//! in its own layout, where the client looks for an error.

use protocol::messages::{ConsumerGroupHeartbeatResponse, RequestKind, ResponseKind};
use protocol::{ResponseError, StrBytes};

const CODE: i16 = ResponseError::UnsupportedVersion.code();

/// The refusal of `request`, if it is one of the refused APIs.
pub fn answer(request: &RequestKind, version: i16) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(super::authorize::add_partitions_to_txn(r, version, CODE))
        }
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
