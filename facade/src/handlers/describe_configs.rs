//! DescribeConfigs: a topic's settings as Kafka names them (the ones that
//! map onto queue options are writable, the rest describe Queen honestly and
//! are read-only), and the broker's.

use crate::broker::ConfigEntry;
use crate::names::str_bytes;
use crate::{Broker, Facade};
use protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult};
use protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use protocol::ResponseError;

pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;
/// A consumer group's resource type (KIP-848, KIP-932's share group configs).
pub const GROUP: i8 = 32;
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const STATIC_BROKER_CONFIG: i8 = 4;
const DEFAULT_CONFIG: i8 = 5;
const GROUP_CONFIG: i8 = 8;

pub fn handle<B: Broker>(f: &Facade<B>, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let results = req
        .resources
        .iter()
        .map(|r| {
            let name = r.resource_name.as_str();
            let answer = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone());
            let entries = match r.resource_type {
                TOPIC => f.broker.topic_config(name).ok_or(ResponseError::UnknownTopicOrPartition),
                BROKER => Ok(broker_config(f)),
                // A group that is not a share group has none of its own.
                GROUP => Ok(f.broker.share_group_config(name).unwrap_or_default()),
                _ => Err(ResponseError::InvalidRequest),
            };
            match entries {
                Ok(entries) => {
                    let wanted =
                        |n: &str| r.configuration_keys.as_ref().is_none_or(|keys| keys.iter().any(|k| k.as_str() == n));
                    let configs = entries
                        .iter()
                        .filter(|e| wanted(&e.name))
                        .map(|e| {
                            let source = match (e.is_set, r.resource_type) {
                                (true, TOPIC) => DYNAMIC_TOPIC_CONFIG,
                                (true, GROUP) => GROUP_CONFIG,
                                (true, _) => STATIC_BROKER_CONFIG,
                                (false, _) => DEFAULT_CONFIG,
                            };
                            DescribeConfigsResourceResult::default()
                                .with_name(str_bytes(&e.name))
                                .with_value(Some(str_bytes(&e.value)))
                                .with_read_only(e.read_only)
                                .with_config_source(source)
                        })
                        .collect();
                    answer.with_configs(configs)
                }
                Err(e) => answer.with_error_code(e.code()).with_error_message(Some(str_bytes(&e.to_string()))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

fn broker_config<B: Broker>(f: &Facade<B>) -> Vec<ConfigEntry> {
    let entry =
        |name: &str, value: String| ConfigEntry { name: name.to_string(), value, read_only: true, is_set: true };
    vec![
        entry("broker.id", f.config.node_id.to_string()),
        entry("auto.create.topics.enable", f.config.auto_create_topics.to_string()),
        entry("num.partitions", f.config.num_partitions.to_string()),
        entry("message.max.bytes", f.config.message_max_bytes.to_string()),
        entry("group.initial.rebalance.delay.ms", f.config.initial_rebalance_delay.as_millis().to_string()),
    ]
}
