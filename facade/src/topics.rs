//! Resolving topic names the way Kafka does: a legal name, and with
//! auto-creation on, a topic that springs into being when first named.

use crate::broker::{BrokerError, TopicView};
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

/// The topic, created with the default partition count when it does not
/// exist, auto-creation is on and the client allows it.
pub async fn resolve<B: Broker>(f: &Facade<B>, name: &str, allow_create: bool) -> Result<TopicView, BrokerError> {
    if let Some(t) = f.broker.topic(name) {
        return Ok(t);
    }
    if !(allow_create && f.config.auto_create_topics) {
        return Err(BrokerError::UnknownTopicOrPartition);
    }
    check_name(name)?;
    match f.broker.create_topic(name.to_string(), f.config.num_partitions, None).await {
        Ok(t) => Ok(t),
        // Another client created it in between.
        Err(BrokerError::TopicAlreadyExists) => f.broker.topic(name).ok_or(BrokerError::UnknownTopicOrPartition),
        Err(e) => Err(e),
    }
}
