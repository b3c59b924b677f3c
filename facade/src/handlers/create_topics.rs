//! CreateTopics: a topic is a queue with `num_partitions` partitions, or one
//! per replica assignment. The replication factor is this node's (1, or the
//! cluster's own later): a request for more is accepted and answered with
//! what holds. Every setting is checked before anything is created, as Kafka
//! does: one unknown setting and the topic is not created.

use crate::names::{str_bytes, uuid};
use crate::topic_settings::{Refusal, TopicSettings};
use crate::{internal_topics, topics, Broker, Facade};
use protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use protocol::messages::create_topics_response::CreatableTopicResult;
use protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use protocol::ResponseError;

/// What a topic of the request asks for, checked.
struct Asked {
    partitions: u32,
    settings: TopicSettings,
}

pub async fn handle<B: Broker>(f: &Facade<B>, req: CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
    let mut results = Vec::new();
    for t in &req.topics {
        let name = t.name.0.as_str().to_string();
        let answer = CreatableTopicResult::default().with_name(t.name.clone());
        let outcome = match topics::check_name(&name).map_err(|e| (e.kafka(), e.to_string())).and(asked(f, t)) {
            Err(refusal) => Err(refusal),
            Ok(_) if f.broker.topic(&name).is_some() || internal_topics::is_internal(&name) => {
                Err((ResponseError::TopicAlreadyExists, format!("topic {name:?} already exists")))
            }
            Ok(asked) if req.validate_only => Ok((asked.partitions, None)),
            Ok(asked) => f
                .broker
                .create_topic(name.clone(), asked.partitions, asked.settings)
                .await
                .map(|created| (asked.partitions, Some(created)))
                .map_err(|e| (e.kafka(), e.to_string())),
        };
        results.push(match outcome {
            Ok((partitions, created)) if version >= 7 => answer
                .with_topic_id(created.map(|t| uuid(t.id)).unwrap_or_default())
                .with_num_partitions(partitions as i32)
                .with_replication_factor(1),
            Ok((partitions, _)) if version >= 5 => {
                answer.with_num_partitions(partitions as i32).with_replication_factor(1)
            }
            Ok(_) => answer,
            Err((code, message)) => answer.with_error_code(code.code()).with_error_message(Some(str_bytes(&message))),
        });
    }
    CreateTopicsResponse::default().with_topics(results)
}

/// The partition count and settings a topic asks for, or why it cannot be
/// created as asked.
fn asked<B: Broker>(f: &Facade<B>, t: &CreatableTopic) -> Result<Asked, Refusal> {
    let partitions = if t.assignments.is_empty() {
        if t.num_partitions == -1 {
            f.config.num_partitions as i32
        } else {
            t.num_partitions
        }
    } else if t.num_partitions != -1 || t.replication_factor != -1 {
        return Err((
            ResponseError::InvalidRequest,
            "with replica assignments, num_partitions and replication_factor are -1".to_string(),
        ));
    } else {
        check_assignments(f.config.node_id, &t.assignments)?;
        t.assignments.len() as i32
    };
    if partitions < 1 {
        return Err((ResponseError::InvalidPartitions, format!("{partitions} partitions: a topic has at least one")));
    }
    let mut settings = TopicSettings::default();
    for c in &t.configs {
        settings.take(c.name.as_str(), c.value.as_deref())?;
    }
    Ok(Asked { partitions: partitions as u32, settings })
}

/// Kafka's rule for explicit assignments: partitions 0..n, each on a
/// non-empty set of live brokers, here this one node.
fn check_assignments(node_id: i32, assignments: &[CreatableReplicaAssignment]) -> Result<(), Refusal> {
    let refuse = |why: String| Err((ResponseError::InvalidReplicaAssignment, why));
    let mut indexes: Vec<i32> = assignments.iter().map(|a| a.partition_index).collect();
    indexes.sort_unstable();
    if indexes.iter().enumerate().any(|(i, p)| *p != i as i32) {
        return refuse(format!("partitions {indexes:?} are not the consecutive sequence 0..{}", indexes.len()));
    }
    for a in assignments {
        let brokers: Vec<i32> = a.broker_ids.iter().map(|b| b.0).collect();
        if brokers != [node_id] {
            return refuse(format!(
                "partition {} is assigned to brokers {brokers:?}; this cluster has the one broker {node_id}",
                a.partition_index
            ));
        }
    }
    Ok(())
}
