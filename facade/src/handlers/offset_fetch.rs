//! OffsetFetch: the group's cursors with their commits' metadata, for one
//! group (v0-v7) or many (v8). A partition the group never consumed answers
//! -1.

use super::by_topic;
use crate::broker::Committed;
use crate::names::{str_bytes, topic_name};
use crate::{topics, Broker, Facade};
use protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};

/// (topic, partition, committed offset or -1 and metadata, error code).
type Row = (String, i32, Committed, i16);

pub fn handle<B: Broker>(f: &Facade<B>, req: OffsetFetchRequest, version: i16) -> OffsetFetchResponse {
    if version >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| {
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter().map(|t| (t.name.0.as_str().to_string(), t.partition_indexes.clone())).collect::<Vec<_>>()
                });
                let answers =
                    rows(f, g.group_id.0.as_str(), asked).into_iter().map(|(topic, partition, committed, code)| {
                        let p = OffsetFetchResponsePartitions::default()
                            .with_partition_index(partition)
                            .with_committed_offset(committed.offset)
                            .with_metadata(Some(str_bytes(&committed.metadata)))
                            .with_error_code(code);
                        (topic, p)
                    });
                let topics = by_topic(answers)
                    .into_iter()
                    .map(|(t, ps)| OffsetFetchResponseTopics::default().with_name(topic_name(&t)).with_partitions(ps))
                    .collect();
                OffsetFetchResponseGroup::default().with_group_id(g.group_id.clone()).with_topics(topics)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let asked = req
        .topics
        .as_ref()
        .map(|ts| ts.iter().map(|t| (t.name.0.as_str().to_string(), t.partition_indexes.clone())).collect::<Vec<_>>());
    let answers = rows(f, req.group_id.0.as_str(), asked).into_iter().map(|(topic, partition, committed, code)| {
        let p = OffsetFetchResponsePartition::default()
            .with_partition_index(partition)
            .with_committed_offset(committed.offset)
            .with_metadata(Some(str_bytes(&committed.metadata)))
            .with_error_code(code);
        (topic, p)
    });
    let topics = by_topic(answers)
        .into_iter()
        .map(|(t, ps)| OffsetFetchResponseTopic::default().with_name(topic_name(&t)).with_partitions(ps))
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

/// The asked partitions' offsets, or (asked = None) every partition the
/// group has a cursor on.
fn rows<B: Broker>(f: &Facade<B>, group: &str, asked: Option<Vec<(String, Vec<i32>)>>) -> Vec<Row> {
    let pairs: Vec<(String, i32)> = match asked {
        Some(asked) => asked.into_iter().flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p))).collect(),
        None => f.broker.group_partitions(group).into_iter().filter(|(t, _)| topics::is_kafka_name(t)).collect(),
    };
    pairs
        .into_iter()
        .map(|(topic, partition)| {
            // Kafka answers an unknown partition with no offset, not an error.
            let none = Committed { offset: -1, metadata: String::new() };
            let committed = f.broker.committed(group, &topic, partition).ok().flatten().unwrap_or(none);
            (topic, partition, committed, 0)
        })
        .collect()
}
