//! ShareAcknowledge (KIP-932): a share member's acknowledgements outside a
//! fetch, a step of its share session; epoch -1 also closes the session
//! and gives back every record the member still holds. From v2 a request
//! that says it renews (`IsRenewAck`) may hold records for another lock
//! time (RENEW).

use super::share_acks::{self, AckBatch};
use crate::names::{str_bytes, uuid};
use crate::{Broker, Facade};
use protocol::messages::share_acknowledge_response::{LeaderIdAndEpoch, PartitionData, ShareAcknowledgeTopicResponse};
use protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use protocol::ResponseError;
use std::collections::BTreeMap;

fn refused(error: ResponseError, why: &str) -> ShareAcknowledgeResponse {
    ShareAcknowledgeResponse::default().with_error_code(error.code()).with_error_message(Some(str_bytes(why)))
}

pub async fn handle<B: Broker>(f: &Facade<B>, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
    let Some(group) = req.group_id.as_ref().map(|g| g.0.as_str().to_string()).filter(|g| !g.is_empty()) else {
        return refused(ResponseError::InvalidRequest, "GroupId is needed");
    };
    let member = req.member_id.as_deref().unwrap_or_default().to_string();
    if member.is_empty() || member.len() > 36 {
        return refused(ResponseError::InvalidRequest, "MemberId must be 1 to 36 characters");
    }
    let epoch = req.share_session_epoch;
    if let Err(e) = f.share_sessions.acknowledge((group.clone(), member.clone()), epoch) {
        return refused(e, &format!("share session of member {member}: {e:?}"));
    }
    let acks = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                let batches = p
                    .acknowledgement_batches
                    .iter()
                    .map(|b| AckBatch { first: b.first_offset, last: b.last_offset, types: &b.acknowledge_types })
                    .collect();
                ((*t.topic_id.as_bytes(), p.partition_index), batches)
            })
        })
        .collect();
    let codes = share_acks::apply(f, &group, &member, acks, req.is_renew_ack).await;
    if epoch == -1 {
        if let Err(e) = f.broker.share_release(group.clone(), member.clone()).await {
            tracing::warn!(group, member, error = %e, "share acknowledge: a closed session's records wait for their locks to run out");
        }
    }
    let leader = LeaderIdAndEpoch::default().with_leader_id(f.config.node_id).with_leader_epoch(0);
    let mut topics: BTreeMap<[u8; 16], Vec<PartitionData>> = BTreeMap::new();
    for ((topic_id, partition), code) in codes {
        topics.entry(topic_id).or_default().push(
            PartitionData::default()
                .with_partition_index(partition)
                .with_error_code(code)
                .with_current_leader(leader.clone()),
        );
    }
    let responses = topics
        .into_iter()
        .map(|(id, partitions)| {
            ShareAcknowledgeTopicResponse::default().with_topic_id(uuid(id)).with_partitions(partitions)
        })
        .collect();
    ShareAcknowledgeResponse::default()
        .with_acquisition_lock_timeout_ms(share_acks::lock_ms(f, &group))
        .with_responses(responses)
}
