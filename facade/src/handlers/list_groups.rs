//! ListGroups: the groups with members here, classic and consumer-protocol
//! ones, the groups that hold cursors (HTTP consumer groups included),
//! which are Empty to Kafka, and the share groups. From v5 each is named
//! with its type (classic, consumer, share), which the request may filter on.

use crate::groups::State;
use crate::names::{group_id, str_bytes};
use crate::{Broker, Facade};
use protocol::messages::list_groups_response::ListedGroup;
use protocol::messages::{ListGroupsRequest, ListGroupsResponse};
use std::collections::BTreeMap;

pub fn handle<B: Broker>(f: &Facade<B>, req: ListGroupsRequest, version: i16) -> ListGroupsResponse {
    // Name → (protocol type, state, group type).
    let mut groups: BTreeMap<String, (String, &'static str, &'static str)> = BTreeMap::new();
    for name in f.broker.group_names() {
        groups.insert(name, ("consumer".to_string(), State::Empty.name(), "classic"));
    }
    for name in f.groups.names() {
        if let Some(g) = f.groups.existing(&name) {
            let g = g.lock().expect("group lock");
            let kind = g.protocol_type.clone().unwrap_or_else(|| "consumer".to_string());
            groups.insert(name, (kind, g.state.name(), "classic"));
        }
    }
    for (name, state) in f.consumer_groups.listed() {
        groups.insert(name, ("consumer".to_string(), state, "consumer"));
    }
    for name in f.broker.share_groups() {
        let state = f.share_groups.state(&name);
        groups.insert(name, ("share".to_string(), state, "share"));
    }
    let wanted = |state: &str, kind: &str| {
        (req.states_filter.is_empty() || req.states_filter.iter().any(|s| s.as_str().eq_ignore_ascii_case(state)))
            && (req.types_filter.is_empty() || req.types_filter.iter().any(|t| t.as_str().eq_ignore_ascii_case(kind)))
    };
    let listed = groups
        .into_iter()
        .filter(|(_, (_, state, kind))| wanted(state, kind))
        .map(|(name, (protocol, state, kind))| {
            ListedGroup::default()
                .with_group_id(group_id(&name))
                .with_protocol_type(str_bytes(&protocol))
                .with_group_state(str_bytes(if version >= 4 { state } else { "" }))
                .with_group_type(str_bytes(if version >= 5 { kind } else { "" }))
        })
        .collect();
    ListGroupsResponse::default().with_groups(listed)
}
