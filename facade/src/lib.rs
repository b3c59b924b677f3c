//! Queen's Kafka listener. Each connection reads size-prefixed requests,
//! decodes them with the sans-I/O `protocol` crate, and answers them in order
//! through one handler per API (`handlers/`). Handlers reach the data only
//! through [`Broker`], which the `queen` crate implements with the same
//! planner commands as the HTTP API; consumer-group membership, which Kafka
//! keeps in the coordinator's memory, lives in [`groups`].

pub mod accept;
pub mod broker;
pub mod config;
mod connection;
pub mod decompress_budget;
pub mod file_range;
pub mod groups;
mod handlers;
mod internal_topics;
mod listener;
mod names;
pub mod sasl;
mod share_sessions;
mod spliced;
pub mod throttle;
pub mod tls;
mod topic_settings;
mod topics;

pub use broker::{Broker, BrokerAddress, GroupCoordinator};
pub use config::FacadeConfig;
pub use decompress_budget::DecompressBudget;
pub use listener::serve;
pub use topic_settings::TopicSettings;

use std::sync::Arc;

/// Everything a connection's handlers share.
pub struct Facade<B: Broker> {
    pub broker: Arc<B>,
    pub config: FacadeConfig,
    pub groups: groups::Coordinator,
    /// Groups of the consumer group protocol (KIP-848).
    pub consumer_groups: groups::ConsumerGroups,
    /// Share groups' members (KIP-932); their records' states are the broker's.
    /// Shared with the HTTP API's consumer-group view, which shows them.
    pub share_groups: Arc<groups::ShareGroups>,
    pub share_sessions: share_sessions::ShareSessions,
}

impl<B: Broker> Facade<B> {
    pub fn new(broker: Arc<B>, config: FacadeConfig) -> Arc<Self> {
        let groups = groups::Coordinator::new(config.initial_rebalance_delay);
        let consumer_groups =
            groups::ConsumerGroups::new(config.consumer_session_timeout, config.consumer_heartbeat_interval);
        // Share groups take Kafka's same defaults as consumer groups.
        let share_groups =
            Arc::new(groups::ShareGroups::new(config.consumer_session_timeout, config.consumer_heartbeat_interval));
        let share_sessions = share_sessions::ShareSessions::default();
        Arc::new(Self { broker, config, groups, consumer_groups, share_groups, share_sessions })
    }
}
