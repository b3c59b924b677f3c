//! The group requests a broker that does not coordinate groups answers
//! with `NOT_COORDINATOR`, so the client asks FindCoordinator again and
//! goes to the one that does (a cluster's leader): every member of a group
//! then meets one coordinator, never one per broker it happened to reach.

use protocol::messages::{
    ConsumerGroupHeartbeatResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, RequestKind,
    ResponseKind, ShareGroupHeartbeatResponse, SyncGroupResponse,
};
use protocol::ResponseError;

/// Whether `request` is one a group member sends its coordinator.
pub fn is_member_call(request: &RequestKind) -> bool {
    matches!(
        request,
        RequestKind::JoinGroup(_)
            | RequestKind::SyncGroup(_)
            | RequestKind::Heartbeat(_)
            | RequestKind::LeaveGroup(_)
            | RequestKind::OffsetCommit(_)
            | RequestKind::ConsumerGroupHeartbeat(_)
            | RequestKind::ShareGroupHeartbeat(_)
    )
}

/// The answer to `request` from a broker that does not coordinate groups
/// (`NOT_COORDINATOR`, or `COORDINATOR_NOT_AVAILABLE` while no broker
/// does); `None` for a request that is not a group member's.
pub fn answer(request: &RequestKind, available: bool) -> Option<ResponseKind> {
    let code = if available { ResponseError::NotCoordinator } else { ResponseError::CoordinatorNotAvailable }.code();
    Some(match request {
        RequestKind::JoinGroup(_) => {
            ResponseKind::JoinGroup(JoinGroupResponse::default().with_error_code(code).with_generation_id(-1))
        }
        RequestKind::SyncGroup(_) => ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(code)),
        RequestKind::Heartbeat(_) => ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(code)),
        RequestKind::LeaveGroup(_) => ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_error_code(code)),
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(super::authorize::offset_commit(r, code)),
        RequestKind::ConsumerGroupHeartbeat(_) => {
            ResponseKind::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse::default().with_error_code(code))
        }
        RequestKind::ShareGroupHeartbeat(_) => {
            ResponseKind::ShareGroupHeartbeat(ShareGroupHeartbeatResponse::default().with_error_code(code))
        }
        _ => return None,
    })
}
