//! SyncGroup: the leader hands in the assignment; every member gets its part.

use crate::names::str_bytes;
use crate::{Broker, Facade};
use protocol::messages::{SyncGroupRequest, SyncGroupResponse};

pub async fn handle<B: Broker>(f: &Facade<B>, req: SyncGroupRequest, version: i16) -> SyncGroupResponse {
    let assignments =
        req.assignments.iter().map(|a| (a.member_id.as_str().to_string(), a.assignment.clone())).collect();
    let instance = req.group_instance_id.as_deref();
    let out =
        f.groups.sync(req.group_id.0.as_str(), req.member_id.as_str(), instance, req.generation_id, assignments).await;
    SyncGroupResponse::default()
        .with_error_code(out.error)
        .with_protocol_type(out.protocol_type.as_deref().filter(|_| version >= 5).map(str_bytes))
        .with_protocol_name(out.protocol.as_deref().filter(|_| version >= 5).map(str_bytes))
        .with_assignment(out.assignment)
}
