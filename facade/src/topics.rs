//! Resolving topic names the way Kafka does: a legal name, and with
//! auto-creation on, a topic that springs into being when first named.
//!
//! One naming rule serves both front ends: a queue is a Kafka topic when
//! its name is a legal Kafka topic name. A queue named otherwise over HTTP
//! (a space, a `:`, non-ASCII) stays HTTP-only: Kafka lists it nowhere and
//! a Kafka client naming it gets INVALID_TOPIC_EXCEPTION.

use crate::broker::{BrokerError, TopicView};
use crate::internal_topics;
use crate::topic_settings::TopicSettings;
use crate::{Broker, Facade};

/// Kafka's rule for topic names: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn check_name(name: &str) -> Result<(), BrokerError> {
    let legal = name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if name.is_empty() || name.len() > 249 || !legal || name == "." || name == ".." {
        return Err(BrokerError::InvalidTopic(format!(
            "{name:?}: a topic name is 1 to 249 characters of letters, digits, '.', '_' and '-'"
        )));
    }
    Ok(())
}

/// Whether Kafka clients see the queue named `name` as a topic: not one
/// named as Kafka's internal topics, which clients see as those.
pub fn is_kafka_name(name: &str) -> bool {
    check_name(name).is_ok() && !internal_topics::is_internal(name)
}

/// Every queue Kafka clients see as a topic.
pub fn visible<B: Broker>(f: &Facade<B>) -> Vec<TopicView> {
    f.broker.topics().into_iter().filter(|t| is_kafka_name(&t.name)).collect()
}

/// The topic, created with the default partition count when it does not
/// exist, auto-creation is on and the client allows it.
pub async fn resolve<B: Broker>(f: &Facade<B>, name: &str, allow_create: bool) -> Result<TopicView, BrokerError> {
    check_name(name)?;
    if internal_topics::is_internal(name) {
        return Err(BrokerError::InvalidTopic(format!("{name} is an internal topic: clients may not write to it")));
    }
    if let Some(t) = f.broker.topic(name) {
        return Ok(t);
    }
    if !(allow_create && f.config.auto_create_topics) {
        return Err(BrokerError::UnknownTopicOrPartition);
    }
    match f.broker.create_topic(name.to_string(), f.config.num_partitions, TopicSettings::default()).await {
        Ok(t) => Ok(t),
        // Another client created it in between.
        Err(BrokerError::TopicAlreadyExists) => f.broker.topic(name).ok_or(BrokerError::UnknownTopicOrPartition),
        Err(e) => Err(e),
    }
}
