//! LeaveGroup: one member (v0-v2) or a batch by member or instance id (v3+).

use crate::names::str_bytes;
use crate::{Broker, Facade};
use protocol::messages::leave_group_response::MemberResponse;
use protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

pub fn handle<B: Broker>(f: &Facade<B>, req: LeaveGroupRequest, version: i16) -> LeaveGroupResponse {
    let who: Vec<(String, Option<String>)> = if version >= 3 {
        req.members
            .iter()
            .map(|m| (m.member_id.as_str().to_string(), m.group_instance_id.as_ref().map(|i| i.as_str().to_string())))
            .collect()
    } else {
        vec![(req.member_id.as_str().to_string(), None)]
    };
    match f.groups.leave(req.group_id.0.as_str(), &who) {
        Err(e) => LeaveGroupResponse::default().with_error_code(e.code()),
        Ok(codes) if version < 3 => LeaveGroupResponse::default().with_error_code(codes[0]),
        Ok(codes) => {
            let members = who
                .iter()
                .zip(codes)
                .map(|((id, instance), code)| {
                    MemberResponse::default()
                        .with_member_id(str_bytes(id))
                        .with_group_instance_id(instance.as_deref().map(str_bytes))
                        .with_error_code(code)
                })
                .collect();
            LeaveGroupResponse::default().with_members(members)
        }
    }
}
