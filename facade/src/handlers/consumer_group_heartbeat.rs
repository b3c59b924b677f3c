//! ConsumerGroupHeartbeat (KIP-848): a member of a consumer-protocol group
//! joins, beats, acknowledges its assignment by the partitions it reports,
//! and leaves, all through this one call (`groups/consumer_group.rs`).

use crate::groups::{Beat, Topic, TopicPartition};
use crate::names::{str_bytes, uuid};
use crate::{topics, Broker, Facade};
use protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use protocol::ResponseError;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

fn refused(error: ResponseError, why: String) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default().with_error_code(error.code()).with_error_message(Some(str_bytes(&why)))
}

pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: ConsumerGroupHeartbeatRequest,
    version: i16,
    client_id: &str,
    peer: SocketAddr,
) -> ConsumerGroupHeartbeatResponse {
    let group = req.group_id.0.as_str();
    if group.is_empty() {
        return refused(ResponseError::InvalidRequest, "GroupId can't be empty".into());
    }
    if f.groups.existing(group).is_some_and(|g| !g.lock().expect("group lock").members.is_empty()) {
        return refused(
            ResponseError::GroupIdNotFound,
            format!("group {group} is a classic group with members: it cannot take consumer-protocol members"),
        );
    }
    if f.share_groups.has_members(group) {
        return refused(
            ResponseError::GroupIdNotFound,
            format!("group {group} is a share group with members: it cannot take consumer-protocol members"),
        );
    }
    // Before v1 the coordinator names a joining member; from v1 the client does.
    let generated;
    let member_id = match req.member_id.as_str() {
        "" if version == 0 && req.member_epoch == 0 => {
            generated = uuid::Uuid::new_v4().simple().to_string();
            generated.as_str()
        }
        id => id,
    };
    // What a subscription may resolve to: the topics clients see, Kafka's
    // internal ones left out (internal_topics.rs).
    let topics: Vec<Topic> = topics::visible(f)
        .into_iter()
        .map(|t| Topic { name: t.name, id: t.id, partitions: t.partitions as i32 })
        .collect();
    let owned = req.topic_partitions.as_ref().map(|tps| {
        tps.iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (*t.topic_id.as_bytes(), *p)))
            .collect::<BTreeSet<TopicPartition>>()
    });
    let host = peer.ip().to_string();
    let beat = Beat {
        member_id,
        epoch: req.member_epoch,
        instance_id: req.instance_id.as_deref(),
        rack_id: req.rack_id.as_deref(),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_names: req.subscribed_topic_names.map(|ns| ns.iter().map(|n| n.0.to_string()).collect()),
        subscribed_regex: req.subscribed_topic_regex.as_deref(),
        assignor: req.server_assignor.as_deref(),
        owned,
        client_id,
        client_host: &host,
    };
    match f.consumer_groups.heartbeat(&*f.broker, group, beat, &topics).await {
        Ok((answer, interval)) => {
            let assignment = answer.assignment.map(|partitions| {
                let mut by_topic: BTreeMap<[u8; 16], Vec<i32>> = BTreeMap::new();
                for (topic, partition) in partitions {
                    by_topic.entry(topic).or_default().push(partition);
                }
                let topics = by_topic
                    .into_iter()
                    .map(|(id, ps)| TopicPartitions::default().with_topic_id(uuid(id)).with_partitions(ps))
                    .collect();
                Assignment::default().with_topic_partitions(topics)
            });
            ConsumerGroupHeartbeatResponse::default()
                .with_member_id(Some(str_bytes(&answer.member_id)))
                .with_member_epoch(answer.epoch)
                .with_heartbeat_interval_ms(interval.as_millis() as i32)
                .with_assignment(assignment)
        }
        Err((error, why)) => refused(error, why),
    }
}
