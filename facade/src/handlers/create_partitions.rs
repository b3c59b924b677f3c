//! CreatePartitions: grows a topic to `count` partitions.

use crate::broker::BrokerError;
use crate::names::str_bytes;
use crate::{Broker, Facade};
use protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

pub async fn handle<B: Broker>(f: &Facade<B>, req: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut results = Vec::new();
    for t in &req.topics {
        let name = t.name.0.as_str().to_string();
        let outcome = match f.broker.topic(&name) {
            None => Err(BrokerError::UnknownTopicOrPartition),
            Some(topic) if t.count <= topic.partitions as i32 => Err(BrokerError::InvalidPartitions(format!(
                "topic {name:?} has {} partitions; the new count must be higher, not {}",
                topic.partitions, t.count
            ))),
            Some(_) if req.validate_only => Ok(()),
            Some(_) => f.broker.create_partitions(name, t.count as u32).await,
        };
        let answer = CreatePartitionsTopicResult::default().with_name(t.name.clone());
        results.push(match outcome {
            Ok(()) => answer,
            Err(e) => answer.with_error_code(e.code()).with_error_message(Some(str_bytes(&e.to_string()))),
        });
    }
    CreatePartitionsResponse::default().with_results(results)
}
