//! DeleteTopics: deletes the queue, its messages and its cursors.

use crate::broker::BrokerError;
use crate::names::{str_bytes, topic_name};
use crate::{internal_topics, Broker, Facade};
use protocol::messages::delete_topics_response::DeletableTopicResult;
use protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};

pub async fn handle<B: Broker>(f: &Facade<B>, req: DeleteTopicsRequest, version: i16) -> DeleteTopicsResponse {
    let names: Vec<String> = if version >= 6 {
        req.topics.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.as_str().to_string())).collect()
    } else {
        req.topic_names.iter().map(|n| n.0.as_str().to_string()).collect()
    };
    let mut responses = Vec::new();
    for name in names {
        let answer = DeletableTopicResult::default().with_name(Some(topic_name(&name)));
        let deleted = match internal_topics::is_internal(&name) {
            true => Err(BrokerError::InvalidTopic(format!("{name} is an internal topic: it cannot be deleted"))),
            false => f.broker.delete_topic(name).await,
        };
        responses.push(match deleted {
            Ok(()) => answer,
            Err(e) if version >= 5 => {
                answer.with_error_code(e.code()).with_error_message(Some(str_bytes(&e.to_string())))
            }
            Err(e) => answer.with_error_code(e.code()),
        });
    }
    DeleteTopicsResponse::default().with_responses(responses)
}
