//! Heartbeat: keeps a member's session and tells it when to rejoin.

use crate::{Broker, Facade};
use protocol::messages::{HeartbeatRequest, HeartbeatResponse};

pub fn handle<B: Broker>(f: &Facade<B>, req: HeartbeatRequest) -> HeartbeatResponse {
    let instance = req.group_instance_id.as_deref();
    let code = match f.groups.heartbeat(req.group_id.0.as_str(), req.member_id.as_str(), instance, req.generation_id) {
        Ok(()) => 0,
        Err(e) => e.code(),
    };
    HeartbeatResponse::default().with_error_code(code)
}
