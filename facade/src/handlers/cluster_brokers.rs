//! The brokers a node names in Metadata and DescribeCluster: itself first,
//! then every other voter of the cluster, and the group coordinator should
//! this node's membership not know it yet. Every node names the same set,
//! whichever leads: librdkafka drops a broker a Metadata answer leaves out
//! and cancels the requests it had in flight there, so a node that named
//! only itself and the coordinator made a consumer that had asked another
//! node for its topic wait out its metadata refresh (minutes) before it
//! joined its group.

use crate::{Broker, BrokerAddress, Facade, GroupCoordinator};

pub fn listed<B: Broker>(f: &Facade<B>) -> Vec<BrokerAddress> {
    let mut brokers = vec![BrokerAddress {
        node_id: f.config.node_id,
        host: f.config.advertised_host.clone(),
        port: f.config.advertised_port,
    }];
    let others = f.broker.other_brokers().into_iter();
    let coordinator = match f.broker.group_coordinator() {
        GroupCoordinator::There(there) => Some(there),
        GroupCoordinator::Here | GroupCoordinator::NotAvailable => None,
    };
    for broker in others.chain(coordinator) {
        if brokers.iter().all(|b| b.node_id != broker.node_id) {
            brokers.push(broker);
        }
    }
    brokers
}
