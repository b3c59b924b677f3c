//! FindCoordinator: this node coordinates every group, singly (v0-v3) or in
//! batches (v4). Transaction coordinators are refused: Kafka transactions are
//! not supported yet (docs/kafka.md).

use crate::names::{broker_id, str_bytes};
use crate::{Broker, Facade};
use protocol::messages::find_coordinator_response::Coordinator;
use protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use protocol::ResponseError;

const GROUP: i8 = 0;

pub fn handle<B: Broker>(f: &Facade<B>, req: FindCoordinatorRequest, version: i16) -> FindCoordinatorResponse {
    let error = if req.key_type == GROUP { 0 } else { ResponseError::UnsupportedVersion.code() };
    let host = str_bytes(&f.config.advertised_host);
    let node = broker_id(f.config.node_id);
    if version >= 4 {
        let coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key)
                    .with_node_id(node)
                    .with_host(host.clone())
                    .with_port(f.config.advertised_port)
                    .with_error_code(error)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    FindCoordinatorResponse::default()
        .with_error_code(error)
        .with_node_id(node)
        .with_host(host)
        .with_port(f.config.advertised_port)
}
