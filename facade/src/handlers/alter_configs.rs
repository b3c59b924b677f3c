//! AlterConfigs and IncrementalAlterConfigs: `retention.ms` on a topic is
//! the queue's retention and `max.message.bytes` the largest batch a
//! produce may write to it; a setting set to the value Queen already applies
//! (`cleanup.policy=delete`) is accepted and changes nothing; every other
//! change is refused with INVALID_CONFIG naming it, so a client never
//! believes a change that did not happen.

use super::describe_configs::{GROUP, TOPIC};
use crate::broker::ConfigEntry;
use crate::names::str_bytes;
use crate::topic_settings::{invalid, Refusal, TopicSettings};
use crate::{Broker, Facade};
use protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResult;
use protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use protocol::{ResponseError, StrBytes};

const SET: i8 = 0;

/// One resource's change: (resource type, name, [(setting, value)]).
type Change = (i8, String, Vec<(String, Option<String>)>);

/// The change a resource asks for, from its (name, value) pairs.
fn change<'a>(
    kind: i8,
    name: &StrBytes,
    settings: impl Iterator<Item = (&'a StrBytes, &'a Option<StrBytes>)>,
) -> Change {
    let settings =
        settings.map(|(k, v)| (k.as_str().to_string(), v.as_ref().map(|v| v.as_str().to_string()))).collect();
    (kind, name.as_str().to_string(), settings)
}

pub async fn handle<B: Broker>(f: &Facade<B>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut responses = Vec::new();
    for r in &req.resources {
        let asked = change(r.resource_type, &r.resource_name, r.configs.iter().map(|c| (&c.name, &c.value)));
        let (code, message) = apply(f, asked, req.validate_only).await;
        responses.push(
            AlterConfigsResourceResponse::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_code(code)
                .with_error_message(message.as_deref().map(str_bytes)),
        );
    }
    AlterConfigsResponse::default().with_responses(responses)
}

pub async fn handle_incremental<B: Broker>(
    f: &Facade<B>,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::new();
    for r in &req.resources {
        let (code, message) = match r.configs.iter().find(|c| c.config_operation != SET) {
            Some(c) => {
                (ResponseError::InvalidConfig.code(), Some(format!("{}: only SET is supported", c.name.as_str())))
            }
            None => {
                let asked = change(r.resource_type, &r.resource_name, r.configs.iter().map(|c| (&c.name, &c.value)));
                apply(f, asked, req.validate_only).await
            }
        };
        responses.push(
            IncrementalResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_code(code)
                .with_error_message(message.as_deref().map(str_bytes)),
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

async fn apply<B: Broker>(f: &Facade<B>, (kind, name, settings): Change, validate_only: bool) -> (i16, Option<String>) {
    if kind == GROUP {
        // Share group configs (KIP-932): setting one makes the group a share group.
        return match f.broker.set_share_group_config(name, settings, validate_only).await {
            Ok(()) => (0, None),
            Err(crate::broker::BrokerError::InvalidRequest(why)) => (ResponseError::InvalidConfig.code(), Some(why)),
            Err(e) => (e.code(), Some(e.to_string())),
        };
    }
    if kind != TOPIC {
        return (ResponseError::InvalidRequest.code(), Some("only topic and group settings can be changed".into()));
    }
    let Some(in_force) = f.broker.topic_config(&name) else {
        return (ResponseError::UnknownTopicOrPartition.code(), None);
    };
    // Every setting is checked before any is applied.
    let mut applied = TopicSettings::default();
    for (setting, value) in settings {
        if let Err((code, message)) = check(&in_force, &mut applied, &setting, value.as_deref()) {
            return (code.code(), Some(message));
        }
    }
    if validate_only || applied.is_empty() {
        return (0, None);
    }
    match f.broker.set_topic_settings(name, applied).await {
        Ok(()) => (0, None),
        Err(e) => (e.code(), Some(e.to_string())),
    }
}

/// One setting set to `value`: taken into `applied` when Queen applies it,
/// nothing for a value already in force (a no-op, as Kafka accepts it), or
/// why not.
fn check(
    in_force: &[ConfigEntry],
    applied: &mut TopicSettings,
    setting: &str,
    value: Option<&str>,
) -> Result<(), Refusal> {
    if applied.take(setting, value)? {
        return Ok(());
    }
    const CHANGEABLE: &str = "only retention.ms and max.message.bytes can";
    match in_force.iter().find(|e| e.name == setting) {
        Some(e) if value == Some(e.value.as_str()) => Ok(()),
        Some(e) => Err(invalid(format!("{setting} is {} on Queen and cannot change; {CHANGEABLE}", e.value))),
        None => Err(invalid(format!("{setting} is not supported by Queen; {CHANGEABLE}"))),
    }
}
