//! ShareGroupHeartbeat (KIP-932): a share member joins (epoch 0), beats and
//! leaves (-1) through this one call (`groups/share_groups.rs`). Joining
//! makes the group a share group in the broker, so its records are taken
//! one by one; a member that leaves or times out gives back the records it
//! held.

use crate::groups::{ShareBeat, Topic};
use crate::names::{str_bytes, uuid};
use crate::{Broker, Facade};
use protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use protocol::ResponseError;
use std::net::SocketAddr;
use std::time::Instant;

fn refused(error: ResponseError, why: String) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse::default().with_error_code(error.code()).with_error_message(Some(str_bytes(&why)))
}

pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: ShareGroupHeartbeatRequest,
    client_id: &str,
    peer: SocketAddr,
) -> ShareGroupHeartbeatResponse {
    let group = req.group_id.0.as_str();
    let member_id = req.member_id.as_str();
    if group.is_empty() || member_id.is_empty() || member_id.len() > 36 {
        return refused(
            ResponseError::InvalidRequest,
            "GroupId and a MemberId of 1 to 36 characters are needed".into(),
        );
    }
    let classic = f.groups.existing(group).is_some_and(|g| !g.lock().expect("group lock").members.is_empty());
    if classic || f.consumer_groups.existing(&*f.broker, group).await.is_some() {
        return refused(
            ResponseError::InconsistentGroupProtocol,
            format!("group {group} is a consumer group with members: it cannot take share members"),
        );
    }
    if req.member_epoch == 0 {
        if let Err(e) = f.broker.declare_share_group(group.to_string()).await {
            return refused(ResponseError::CoordinatorNotAvailable, format!("share group {group}: {e}"));
        }
    }
    let topics: Vec<Topic> = f
        .broker
        .topics()
        .into_iter()
        .map(|t| Topic { name: t.name, id: t.id, partitions: t.partitions as i32 })
        .collect();
    let host = peer.ip().to_string();
    let beat = ShareBeat {
        member_id,
        epoch: req.member_epoch,
        rack: req.rack_id.as_deref(),
        subscribed: req.subscribed_topic_names.map(|ns| ns.iter().map(|n| n.0.to_string()).collect()),
        client_id,
        client_host: &host,
    };
    let (answer, gone) = f.share_groups.heartbeat(group, beat, &topics, Instant::now());
    for member in gone {
        // Best effort: records a member held and could not give back now
        // come back when their locks run out.
        if let Err(e) = f.broker.share_release(group.to_string(), member.clone()).await {
            tracing::warn!(group, member, error = %e, "share group: a departed member's records wait for their locks to run out");
        }
    }
    match answer {
        Ok(a) => {
            let assignment = a.assignment.map(|by_topic| {
                let topics = by_topic
                    .into_iter()
                    .map(|(id, ps)| TopicPartitions::default().with_topic_id(uuid(id)).with_partitions(ps))
                    .collect();
                Assignment::default().with_topic_partitions(topics)
            });
            ShareGroupHeartbeatResponse::default()
                .with_member_id(Some(str_bytes(member_id)))
                .with_member_epoch(a.epoch)
                .with_heartbeat_interval_ms(f.share_groups.heartbeat_interval.as_millis() as i32)
                .with_assignment(assignment)
        }
        Err((error, why)) => refused(error, why),
    }
}
