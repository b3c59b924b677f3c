//! DescribeCluster: the brokers Metadata names (`cluster_brokers.rs`);
//! this node is the controller.

use crate::names::{broker_id, str_bytes};
use crate::{Broker, Facade};
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};

pub fn handle<B: Broker>(f: &Facade<B>, _req: DescribeClusterRequest) -> DescribeClusterResponse {
    let brokers = super::cluster_brokers::listed(f)
        .into_iter()
        .map(|b| {
            DescribeClusterBroker::default()
                .with_broker_id(broker_id(b.node_id))
                .with_host(str_bytes(&b.host))
                .with_port(b.port)
        })
        .collect();
    DescribeClusterResponse::default()
        .with_cluster_id(str_bytes(&f.config.cluster_id))
        .with_controller_id(broker_id(f.config.node_id))
        .with_brokers(brokers)
}
