//! JoinGroup: parks the member until the rebalance completes; the leader's
//! answer carries every member's subscription.

use crate::groups::JoinAsk;
use crate::names::str_bytes;
use crate::{Broker, Facade};
use protocol::messages::join_group_response::JoinGroupResponseMember;
use protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use std::net::SocketAddr;
use std::time::Duration;

pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: JoinGroupRequest,
    version: i16,
    client_id: &str,
    peer: SocketAddr,
) -> JoinGroupResponse {
    let consumer_protocol = f.consumer_groups.existing(&*f.broker, req.group_id.0.as_str()).await.is_some();
    if consumer_protocol || f.share_groups.has_members(req.group_id.0.as_str()) {
        // Its members run the consumer group protocol (KIP-848), or are share members (KIP-932).
        return JoinGroupResponse::default()
            .with_error_code(protocol::ResponseError::InconsistentGroupProtocol.code())
            .with_generation_id(-1);
    }
    let session = Duration::from_millis(req.session_timeout_ms.max(0) as u64);
    // v0 has no rebalance timeout: it is the session timeout.
    let rebalance = if version >= 1 { Duration::from_millis(req.rebalance_timeout_ms.max(0) as u64) } else { session };
    let ask = JoinAsk {
        member_id: req.member_id.as_str().to_string(),
        instance_id: req.group_instance_id.as_ref().map(|s| s.as_str().to_string()),
        client_id: client_id.to_string(),
        client_host: format!("/{}", peer.ip()),
        protocol_type: req.protocol_type.as_str().to_string(),
        protocols: req.protocols.iter().map(|p| (p.name.as_str().to_string(), p.metadata.clone())).collect(),
        session_timeout: session,
        rebalance_timeout: rebalance,
        requires_known_id: version >= 4,
    };
    let out = f.groups.join(req.group_id.0.as_str(), ask).await;
    let members = out
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            JoinGroupResponseMember::default()
                .with_member_id(str_bytes(&id))
                .with_group_instance_id(instance.as_deref().filter(|_| version >= 5).map(str_bytes))
                .with_metadata(metadata)
        })
        .collect();
    JoinGroupResponse::default()
        .with_error_code(out.error)
        .with_generation_id(out.generation)
        .with_protocol_type(out.protocol_type.as_deref().filter(|_| version >= 7).map(str_bytes))
        .with_protocol_name(out.protocol.as_deref().map(str_bytes))
        .with_leader(str_bytes(&out.leader))
        .with_member_id(str_bytes(&out.member_id))
        .with_members(members)
}
