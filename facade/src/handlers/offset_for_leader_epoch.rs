//! OffsetForLeaderEpoch: this node has led every partition since epoch 0,
//! so every epoch ends at the high watermark.

use crate::{Broker, Facade};
use protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
use protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

pub fn handle<B: Broker>(f: &Facade<B>, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let answer = EpochEndOffset::default().with_partition(p.partition);
                    match f.broker.offsets(t.topic.0.as_str(), p.partition) {
                        Ok(o) => answer.with_leader_epoch(0).with_end_offset(o.high_watermark),
                        Err(e) => answer.with_error_code(e.code()),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default().with_topic(t.topic.clone()).with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
