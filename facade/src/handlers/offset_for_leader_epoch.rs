//! OffsetForLeaderEpoch: this node has led every partition since epoch 0,
//! so every epoch ends at the high watermark, read behind the read gate (a
//! lagging end offset would look to the client like a truncation).

use crate::broker::Read;
use crate::{Broker, Facade};
use protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
use protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

pub async fn handle<B: Broker>(f: &Facade<B>, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let topics = req.topics.iter().map(|t| t.topic.0.to_string()).collect();
    let gate = f.broker.read_gate(Read::Topics(topics)).await.map_err(|e| e.code());
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let answer = EpochEndOffset::default().with_partition(p.partition);
                    match gate.and_then(|()| f.broker.offsets(t.topic.0.as_str(), p.partition).map_err(|e| e.code())) {
                        Ok(o) => answer.with_leader_epoch(0).with_end_offset(o.high_watermark),
                        Err(code) => answer.with_error_code(code),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default().with_topic(t.topic.clone()).with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
