//! The APIs Queen answers but does not serve yet (`protocol::versions::
//! REFUSED`): share groups (KIP-932), and AddPartitionsToTxn's v4+
//! (the brokers' batched verification form). Each gets UNSUPPORTED_VERSION
//! in its own layout, where the client looks for an error.

use protocol::messages::{RequestKind, ResponseKind, ShareGroupHeartbeatResponse};
use protocol::{ResponseError, StrBytes};

const CODE: i16 = ResponseError::UnsupportedVersion.code();

/// The refusal of `request`, if it is one of the refused APIs.
pub fn answer(request: &RequestKind, version: i16) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(super::authorize::add_partitions_to_txn(r, version, CODE))
        }
        RequestKind::ShareGroupHeartbeat(_) => ResponseKind::ShareGroupHeartbeat(
            ShareGroupHeartbeatResponse::default()
                .with_error_code(CODE)
                .with_error_message(Some(StrBytes::from_static_str("share groups (KIP-932) are not supported yet"))),
        ),
        _ => return None,
    })
}
