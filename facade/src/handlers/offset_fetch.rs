//! OffsetFetch: the group's cursors, for one group (v0-v7) or many (v8).
//! A partition the group never consumed answers -1.

use crate::names::topic_name;
use crate::{Broker, Facade};
use protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};

/// (topic, partition, committed offset or -1, error code).
type Row = (String, i32, i64, i16);

pub fn handle<B: Broker>(f: &Facade<B>, req: OffsetFetchRequest, version: i16) -> OffsetFetchResponse {
    if version >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| {
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter().map(|t| (t.name.0.as_str().to_string(), t.partition_indexes.clone())).collect::<Vec<_>>()
                });
                let mut topics: Vec<OffsetFetchResponseTopics> = Vec::new();
                for (topic, partition, offset, code) in rows(f, g.group_id.0.as_str(), asked) {
                    let p = OffsetFetchResponsePartitions::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset)
                        .with_metadata(Some(Default::default()))
                        .with_error_code(code);
                    match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
                        Some(t) => t.partitions.push(p),
                        None => topics.push(
                            OffsetFetchResponseTopics::default().with_name(topic_name(&topic)).with_partitions(vec![p]),
                        ),
                    }
                }
                OffsetFetchResponseGroup::default().with_group_id(g.group_id.clone()).with_topics(topics)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let asked = req
        .topics
        .as_ref()
        .map(|ts| ts.iter().map(|t| (t.name.0.as_str().to_string(), t.partition_indexes.clone())).collect::<Vec<_>>());
    let mut topics: Vec<OffsetFetchResponseTopic> = Vec::new();
    for (topic, partition, offset, code) in rows(f, req.group_id.0.as_str(), asked) {
        let p = OffsetFetchResponsePartition::default()
            .with_partition_index(partition)
            .with_committed_offset(offset)
            .with_metadata(Some(Default::default()))
            .with_error_code(code);
        match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partitions.push(p),
            None => {
                topics.push(OffsetFetchResponseTopic::default().with_name(topic_name(&topic)).with_partitions(vec![p]))
            }
        }
    }
    OffsetFetchResponse::default().with_topics(topics)
}

/// The asked partitions' offsets, or (asked = None) every partition the
/// group has a cursor on.
fn rows<B: Broker>(f: &Facade<B>, group: &str, asked: Option<Vec<(String, Vec<i32>)>>) -> Vec<Row> {
    let pairs: Vec<(String, i32)> = match asked {
        Some(asked) => asked.into_iter().flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p))).collect(),
        None => f.broker.group_partitions(group),
    };
    pairs
        .into_iter()
        .map(|(topic, partition)| match f.broker.committed_offset(group, &topic, partition) {
            Ok(offset) => (topic, partition, offset.unwrap_or(-1), 0),
            // Kafka answers an unknown partition with no offset, not an error.
            Err(_) => (topic, partition, -1, 0),
        })
        .collect()
}
