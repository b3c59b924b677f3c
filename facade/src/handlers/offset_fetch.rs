//! OffsetFetch: the group's cursors with their commits' metadata, for one
//! group (v0-v7) or many (v8). A partition the group never consumed answers
//! -1. Read behind the read gate: a consumer resumes from what it is
//! answered, and a commit that moved back (an offset reset, a deletion)
//! must not read as the offset before it. When the gate cannot be passed,
//! COORDINATOR_NOT_AVAILABLE, and the client asks again. With
//! `require_stable` (v7+, a read_committed consumer), a partition whose
//! offsets an open transaction holds answers UNSTABLE_OFFSET_COMMIT, and the
//! client asks again once the transaction ends.

use super::by_topic;
use crate::broker::Committed;
use crate::broker::Read;
use crate::names::{str_bytes, topic_name};
use crate::{topics, Broker, Facade};
use protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};
use protocol::ResponseError;

/// (topic, partition, committed offset or -1 and metadata, error code).
type Row = (String, i32, Committed, i16);

pub async fn handle<B: Broker>(f: &Facade<B>, req: OffsetFetchRequest, version: i16) -> OffsetFetchResponse {
    let gate = f.broker.read_gate(Read::Everything).await.map_err(|_| ResponseError::CoordinatorNotAvailable.code());
    let refused = gate.err().unwrap_or(0);
    if version >= 8 {
        // v9: a consumer-protocol member reads at its member epoch (an
        // admin, with no member and a negative epoch, at any).
        let mut stale_codes = Vec::with_capacity(req.groups.len());
        for g in &req.groups {
            let member = g.member_id.as_ref().map(|m| m.as_str()).unwrap_or_default();
            let admin = g.member_id.is_none() && g.member_epoch < 0;
            let checked = match admin {
                true => None,
                false => f.consumer_groups.may_fetch(&*f.broker, g.group_id.0.as_str(), member, g.member_epoch).await,
            };
            stale_codes.push(checked.and_then(Result::err).map_or(0, |e| e.code()));
        }
        let groups = req
            .groups
            .iter()
            .zip(stale_codes)
            .map(|(g, stale)| {
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter().map(|t| (t.name.0.as_str().to_string(), t.partition_indexes.clone())).collect::<Vec<_>>()
                });
                let answers = rows(f, g.group_id.0.as_str(), asked, gate, req.require_stable).into_iter().map(
                    |(topic, partition, committed, code)| {
                        let p = OffsetFetchResponsePartitions::default()
                            .with_partition_index(partition)
                            .with_committed_offset(committed.offset)
                            .with_metadata(Some(str_bytes(&committed.metadata)))
                            .with_error_code(code);
                        (topic, p)
                    },
                );
                let topics = by_topic(answers)
                    .into_iter()
                    .map(|(t, ps)| OffsetFetchResponseTopics::default().with_name(topic_name(&t)).with_partitions(ps))
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_topics(if stale == 0 { topics } else { vec![] })
                    .with_error_code(if refused != 0 { refused } else { stale })
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let asked = req
        .topics
        .as_ref()
        .map(|ts| ts.iter().map(|t| (t.name.0.as_str().to_string(), t.partition_indexes.clone())).collect::<Vec<_>>());
    let answers = rows(f, req.group_id.0.as_str(), asked, gate, req.require_stable).into_iter().map(
        |(topic, partition, committed, code)| {
            let p = OffsetFetchResponsePartition::default()
                .with_partition_index(partition)
                .with_committed_offset(committed.offset)
                .with_metadata(Some(str_bytes(&committed.metadata)))
                .with_error_code(code);
            (topic, p)
        },
    );
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| OffsetFetchResponseTopic::default().with_name(topic_name(&t)).with_partitions(ps))
        .collect();
    let answer = OffsetFetchResponse::default().with_topics(topics);
    // The top-level error code is v2's; before it, each partition carries it.
    if version >= 2 {
        answer.with_error_code(refused)
    } else {
        answer
    }
}

/// The asked partitions' offsets, or (asked = None) every partition the
/// group has a cursor on; past a refused gate, none (each asked partition
/// with the refusal's code).
fn rows<B: Broker>(
    f: &Facade<B>,
    group: &str,
    asked: Option<Vec<(String, Vec<i32>)>>,
    gate: Result<(), i16>,
    require_stable: bool,
) -> Vec<Row> {
    let pairs: Vec<(String, i32)> = match asked {
        Some(asked) => asked.into_iter().flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p))).collect(),
        None if gate.is_err() => Vec::new(),
        None => f.broker.group_partitions(group).into_iter().filter(|(t, _)| topics::is_kafka_name(t)).collect(),
    };
    // Kafka answers an unknown partition with no offset, not an error.
    let none = || Committed { offset: -1, metadata: String::new() };
    pairs
        .into_iter()
        .map(|(topic, partition)| match gate {
            Ok(()) if require_stable && f.broker.txn_offsets_pending(group, &topic, partition) => {
                (topic, partition, none(), ResponseError::UnstableOffsetCommit.code())
            }
            Ok(()) => {
                let committed = f.broker.committed(group, &topic, partition).ok().flatten().unwrap_or_else(none);
                (topic, partition, committed, 0)
            }
            Err(code) => (topic, partition, none(), code),
        })
        .collect()
}
