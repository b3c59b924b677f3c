//! CreateTopics: a topic is a queue with `num_partitions` partitions. The
//! replication factor is this node's (1, or the cluster's own later): a
//! request for more is accepted and answered with what holds.

use crate::names::{str_bytes, uuid};
use crate::{topics, Broker, Facade};
use protocol::messages::create_topics_response::CreatableTopicResult;
use protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use protocol::ResponseError;

pub async fn handle<B: Broker>(f: &Facade<B>, req: CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
    let mut results = Vec::new();
    for t in &req.topics {
        let name = t.name.0.as_str().to_string();
        let partitions = if t.num_partitions == -1 { f.config.num_partitions as i32 } else { t.num_partitions };
        let answer = CreatableTopicResult::default().with_name(t.name.clone());
        let outcome = if let Err(e) = topics::check_name(&name) {
            Err((e.kafka(), e.to_string()))
        } else if partitions < 1 {
            Err((ResponseError::InvalidPartitions, format!("{partitions} partitions: a topic has at least one")))
        } else if f.broker.topic(&name).is_some() {
            Err((ResponseError::TopicAlreadyExists, format!("topic {name:?} already exists")))
        } else if req.validate_only {
            Ok(None)
        } else {
            f.broker
                .create_topic(name.clone(), partitions as u32)
                .await
                .map(Some)
                .map_err(|e| (e.kafka(), e.to_string()))
        };
        results.push(match outcome {
            Ok(created) if version >= 7 => answer
                .with_topic_id(created.map(|t| uuid(t.id)).unwrap_or_default())
                .with_num_partitions(partitions)
                .with_replication_factor(1),
            Ok(_) if version >= 5 => answer.with_num_partitions(partitions).with_replication_factor(1),
            Ok(_) => answer,
            Err((code, message)) => answer.with_error_code(code.code()).with_error_message(Some(str_bytes(&message))),
        });
    }
    CreateTopicsResponse::default().with_topics(results)
}
