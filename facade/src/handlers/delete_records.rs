//! DeleteRecords: refused with POLICY_VIOLATION. Queen drops a partition's
//! records by retention and reclaim, decided by the planner, not on request
//! (docs/kafka.md).

use crate::{Broker, Facade};
use protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
use protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use protocol::ResponseError;

pub fn handle<B: Broker>(f: &Facade<B>, req: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let low = f.broker.offsets(t.name.0.as_str(), p.partition_index);
                    DeleteRecordsPartitionResult::default()
                        .with_partition_index(p.partition_index)
                        .with_low_watermark(low.as_ref().map_or(-1, |o| o.log_start))
                        .with_error_code(match low {
                            Ok(_) => ResponseError::PolicyViolation.code(),
                            Err(e) => e.code(),
                        })
                })
                .collect();
            DeleteRecordsTopicResult::default().with_name(t.name.clone()).with_partitions(partitions)
        })
        .collect();
    DeleteRecordsResponse::default().with_topics(topics)
}
