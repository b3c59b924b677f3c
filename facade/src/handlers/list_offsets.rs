//! ListOffsets: earliest (-2), latest (-1), the record with the largest
//! timestamp (-3) and the first record whose timestamp is at or after a time.
//! Read behind the read gate: a consumer starts from what it is answered.
//! At READ_COMMITTED (isolation level 1) latest is the last stable offset.

use crate::broker::Read;
use crate::names::topic_name;
use crate::{Broker, Facade};
use protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
/// Tiered storage's local log start (v8+): every record here is local.
const EARLIEST_LOCAL: i64 = -4;
/// Tiered storage's last tiered offset (v9+): nothing is tiered here, so the latest.
const LATEST_TIERED: i64 = -5;
const READ_COMMITTED: i8 = 1;

pub async fn handle<B: Broker>(f: &Facade<B>, req: ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
    let topics = req.topics.iter().map(|t| t.name.0.to_string()).collect();
    let gate = f.broker.read_gate(Read::Topics(topics)).await.map_err(|e| e.code());
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let name = t.name.0.as_str();
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let answer = ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
            // Fields a version lacks must keep their defaults to encode.
            let answer = if version >= 4 { answer.with_leader_epoch(0) } else { answer };
            let found = match gate {
                Ok(()) => lookup(f, name, p.partition_index, p.timestamp, req.isolation_level == READ_COMMITTED).await,
                Err(code) => Err(code),
            };
            partitions.push(match found {
                Ok((offset, timestamp)) => answer.with_offset(offset).with_timestamp(timestamp),
                Err(code) => answer.with_error_code(code).with_offset(-1).with_timestamp(-1),
            });
        }
        topics.push(ListOffsetsTopicResponse::default().with_name(topic_name(name)).with_partitions(partitions));
    }
    ListOffsetsResponse::default().with_topics(topics)
}

/// (offset, timestamp) for the asked timestamp; -1 where Kafka answers none.
async fn lookup<B: Broker>(
    f: &Facade<B>,
    topic: &str,
    partition: i32,
    timestamp: i64,
    read_committed: bool,
) -> Result<(i64, i64), i16> {
    let offsets = f.broker.offsets(topic, partition).map_err(|e| e.code())?;
    let latest = if read_committed { offsets.last_stable } else { offsets.high_watermark };
    let found = match timestamp {
        LATEST | LATEST_TIERED => Some((latest, -1)),
        EARLIEST | EARLIEST_LOCAL => Some((offsets.log_start, -1)),
        MAX_TIMESTAMP => f.broker.max_timestamp(topic.to_string(), partition).await.map_err(|e| e.code())?,
        t if t >= 0 => f.broker.offset_for_time(topic.to_string(), partition, t).await.map_err(|e| e.code())?,
        _ => return Err(protocol::ResponseError::InvalidRequest.code()),
    };
    Ok(found.unwrap_or((-1, -1)))
}
