//! DescribeGroups: state, protocol and members; a group known only by its
//! cursors is Empty, an unknown one Dead, as Kafka answers them.

use crate::names::str_bytes;
use crate::{Broker, Facade};
use protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};

pub fn handle<B: Broker>(f: &Facade<B>, req: DescribeGroupsRequest, version: i16) -> DescribeGroupsResponse {
    let known = f.broker.group_names();
    let groups = req
        .groups
        .iter()
        .map(|id| {
            let name = id.0.as_str();
            let answer = DescribedGroup::default().with_group_id(id.clone());
            match f.groups.existing(name) {
                Some(g) => {
                    let g = g.lock().expect("group lock");
                    let members = g
                        .members
                        .values()
                        .map(|m| {
                            let metadata = g
                                .protocol
                                .as_ref()
                                .and_then(|p| m.protocols.iter().find(|(q, _)| q == p))
                                .map(|(_, b)| b.clone())
                                .unwrap_or_default();
                            DescribedGroupMember::default()
                                .with_member_id(str_bytes(&m.id))
                                .with_group_instance_id(
                                    m.instance_id.as_deref().filter(|_| version >= 4).map(str_bytes),
                                )
                                .with_client_id(str_bytes(&m.client_id))
                                .with_client_host(str_bytes(&m.client_host))
                                .with_member_metadata(metadata)
                                .with_member_assignment(m.assignment.clone())
                        })
                        .collect();
                    answer
                        .with_group_state(str_bytes(g.state.name()))
                        .with_protocol_type(str_bytes(g.protocol_type.as_deref().unwrap_or("consumer")))
                        .with_protocol_data(str_bytes(g.protocol.as_deref().unwrap_or("")))
                        .with_members(members)
                }
                None if known.iter().any(|k| k == name) => {
                    answer.with_group_state(str_bytes("Empty")).with_protocol_type(str_bytes("consumer"))
                }
                None => answer.with_group_state(str_bytes("Dead")),
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}
