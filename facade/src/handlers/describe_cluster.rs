//! DescribeCluster: this node, which is also the controller.

use crate::names::{broker_id, str_bytes};
use crate::{Broker, Facade};
use protocol::messages::describe_cluster_response::DescribeClusterBroker;
use protocol::messages::{DescribeClusterRequest, DescribeClusterResponse};

pub fn handle<B: Broker>(f: &Facade<B>, _req: DescribeClusterRequest) -> DescribeClusterResponse {
    let me = broker_id(f.config.node_id);
    let broker = DescribeClusterBroker::default()
        .with_broker_id(me)
        .with_host(str_bytes(&f.config.advertised_host))
        .with_port(f.config.advertised_port);
    DescribeClusterResponse::default()
        .with_cluster_id(str_bytes(&f.config.cluster_id))
        .with_controller_id(me)
        .with_brokers(vec![broker])
}
