//! ListGroups: the groups with members here, classic and consumer-protocol
//! ones, and the groups that hold cursors (HTTP consumer groups included),
//! which are Empty to Kafka.

use crate::groups::State;
use crate::names::{group_id, str_bytes};
use crate::{Broker, Facade};
use protocol::messages::list_groups_response::ListedGroup;
use protocol::messages::{ListGroupsRequest, ListGroupsResponse};
use std::collections::BTreeMap;

pub fn handle<B: Broker>(f: &Facade<B>, req: ListGroupsRequest, version: i16) -> ListGroupsResponse {
    let mut groups: BTreeMap<String, (String, &'static str)> = BTreeMap::new();
    for name in f.broker.group_names() {
        groups.insert(name, ("consumer".to_string(), State::Empty.name()));
    }
    for name in f.groups.names() {
        if let Some(g) = f.groups.existing(&name) {
            let g = g.lock().expect("group lock");
            let kind = g.protocol_type.clone().unwrap_or_else(|| "consumer".to_string());
            groups.insert(name, (kind, g.state.name()));
        }
    }
    for (name, state) in f.consumer_groups.listed() {
        groups.insert(name, ("consumer".to_string(), state));
    }
    let wanted = |state: &str| {
        req.states_filter.is_empty() || req.states_filter.iter().any(|s| s.as_str().eq_ignore_ascii_case(state))
    };
    let listed = groups
        .into_iter()
        .filter(|(_, (_, state))| wanted(state))
        .map(|(name, (kind, state))| {
            ListedGroup::default()
                .with_group_id(group_id(&name))
                .with_protocol_type(str_bytes(&kind))
                .with_group_state(str_bytes(if version >= 4 { state } else { "" }))
        })
        .collect();
    ListGroupsResponse::default().with_groups(listed)
}
