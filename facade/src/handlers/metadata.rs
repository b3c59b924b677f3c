//! Metadata: this node leads every partition; topics are the queues with
//! Kafka names (`topics.rs`), their partitions in creation order. On a
//! cluster every voter is listed beside this node (`cluster_brokers.rs`):
//! librdkafka sends InitProducerId and the group calls only to a coordinator
//! its metadata knows.

use crate::broker::TopicView;
use crate::names::{broker_id, str_bytes, topic_name, uuid};
use crate::{internal_topics, topics, Broker, Facade};
use protocol::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use protocol::messages::{MetadataRequest, MetadataResponse};

/// `may_create`: the principal's role may create topics, so auto-creation
/// applies to it.
pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: MetadataRequest,
    version: i16,
    may_create: bool,
) -> MetadataResponse {
    let me = broker_id(f.config.node_id);
    let broker = |id: i32, host: &str, port: i32| {
        MetadataResponseBroker::default().with_node_id(broker_id(id)).with_host(str_bytes(host)).with_port(port)
    };
    let brokers = super::cluster_brokers::listed(f).iter().map(|b| broker(b.node_id, &b.host, b.port)).collect();
    // v0 asks for every topic with an empty list; v1+ with null.
    let every = match &req.topics {
        None => true,
        Some(list) => list.is_empty() && version == 0,
    };
    let allow_create = may_create && (version < 4 || req.allow_auto_topic_creation);
    let mut topics = Vec::new();
    if every {
        topics.extend(topics::visible(f).into_iter().map(|t| topic_answer(f, &t, version)));
        topics.extend(internal_topics::views().iter().map(|t| topic_answer(f, t, version)));
    } else {
        for asked in req.topics.unwrap_or_default() {
            let by_name = asked.name.as_ref().map(|n| n.0.as_str().to_string());
            let found = match &by_name {
                Some(name) => match internal_topics::view(name) {
                    Some(internal) => Ok(internal),
                    None => topics::resolve(f, name, allow_create).await,
                },
                None => {
                    let id = *asked.topic_id.as_bytes();
                    f.broker
                        .topic_by_id(id)
                        .or_else(|| internal_topics::by_id(id))
                        .ok_or(crate::broker::BrokerError::UnknownTopicOrPartition)
                }
            };
            topics.push(match found {
                Ok(t) => topic_answer(f, &t, version),
                Err(e) => MetadataResponseTopic::default()
                    .with_error_code(e.code())
                    .with_name(by_name.as_deref().map(topic_name))
                    .with_topic_id(if version >= 10 { asked.topic_id } else { Default::default() }),
            });
        }
    }
    // Fields a version lacks must keep their defaults to encode.
    let answer = MetadataResponse::default().with_brokers(brokers).with_controller_id(me).with_topics(topics);
    if version >= 2 {
        answer.with_cluster_id(Some(str_bytes(&f.config.cluster_id)))
    } else {
        answer
    }
}

fn topic_answer<B: Broker>(f: &Facade<B>, t: &TopicView, version: i16) -> MetadataResponseTopic {
    let me = broker_id(f.config.node_id);
    let partitions = (0..t.partitions as i32)
        .map(|p| {
            MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(me)
                .with_leader_epoch(if version >= 7 { 0 } else { -1 })
                .with_replica_nodes(vec![me])
                .with_isr_nodes(vec![me])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(&t.name)))
        .with_topic_id(if version >= 10 { uuid(t.id) } else { Default::default() })
        .with_partitions(partitions)
        .with_is_internal(internal_topics::is_internal(&t.name))
}
