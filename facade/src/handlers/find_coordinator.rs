//! FindCoordinator: the broker that coordinates every consumer group and
//! every transactional id (this one, or a cluster's leader), singly (v0-v3)
//! or in batches (v4).

use crate::names::{broker_id, str_bytes};
use crate::{Broker, Facade, GroupCoordinator};
use protocol::messages::find_coordinator_response::Coordinator;
use protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use protocol::ResponseError;

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

pub fn handle<B: Broker>(f: &Facade<B>, req: FindCoordinatorRequest, version: i16) -> FindCoordinatorResponse {
    let here = (broker_id(f.config.node_id), str_bytes(&f.config.advertised_host), f.config.advertised_port);
    // A cluster's groups are coordinated by its leader (`not_coordinator.rs`).
    let ((node, host, port), available) = match f.broker.group_coordinator() {
        GroupCoordinator::Here => (here, true),
        GroupCoordinator::There(there) => ((broker_id(there.node_id), str_bytes(&there.host), there.port), true),
        GroupCoordinator::NotAvailable => (here, false),
    };
    let error = match (matches!(req.key_type, GROUP | TRANSACTION), available) {
        (false, _) => ResponseError::UnsupportedVersion.code(),
        (true, false) => ResponseError::CoordinatorNotAvailable.code(),
        (true, true) => 0,
    };
    if version >= 4 {
        let coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key)
                    .with_node_id(node)
                    .with_host(host.clone())
                    .with_port(port)
                    .with_error_code(error)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    FindCoordinatorResponse::default().with_error_code(error).with_node_id(node).with_host(host).with_port(port)
}
