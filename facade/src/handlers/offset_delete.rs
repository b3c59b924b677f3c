//! OffsetDelete: forgets a group's cursors on whole topics; refused while
//! the group has members (they may be consuming those partitions).

use crate::names::topic_name;
use crate::{Broker, Facade};
use protocol::messages::offset_delete_response::{OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
use protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use protocol::ResponseError;

pub async fn handle<B: Broker>(f: &Facade<B>, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let group = req.group_id.0.as_str().to_string();
    let active = f.groups.existing(&group).is_some_and(|g| !g.lock().expect("group lock").members.is_empty());
    let mut topics = Vec::new();
    for t in &req.topics {
        let name = t.name.0.as_str().to_string();
        let code = if active {
            ResponseError::GroupSubscribedToTopic.code()
        } else {
            match f.broker.delete_group_offsets(group.clone(), Some(name.clone())).await {
                Ok(()) => 0,
                Err(e) => e.code(),
            }
        };
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                OffsetDeleteResponsePartition::default().with_partition_index(p.partition_index).with_error_code(code)
            })
            .collect();
        topics.push(OffsetDeleteResponseTopic::default().with_name(topic_name(&name)).with_partitions(partitions));
    }
    OffsetDeleteResponse::default().with_topics(topics)
}
