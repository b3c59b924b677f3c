//! DeleteGroups: forgets an empty group and its cursors on every topic; a
//! share group with them its configs, and it is an ordinary group again.

use crate::{Broker, Facade};
use protocol::messages::delete_groups_response::DeletableGroupResult;
use protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use protocol::ResponseError;

pub async fn handle<B: Broker>(f: &Facade<B>, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut results = Vec::new();
    for id in &req.groups_names {
        let name = id.0.as_str().to_string();
        let has_cursors = f.broker.group_names().contains(&name);
        let has_members = f.groups.existing(&name).is_some();
        let share = f.broker.share_groups().contains(&name);
        let code = if !f.groups.remove_if_empty(&name) || f.share_groups.has_members(&name) {
            ResponseError::NonEmptyGroup.code()
        } else if share {
            let forgotten = f.broker.delete_group_offsets(name.clone(), None).await;
            match forgotten.and(f.broker.forget_share_group(name).await) {
                Ok(()) => 0,
                Err(e) => e.code(),
            }
        } else if !has_cursors && !has_members {
            ResponseError::GroupIdNotFound.code()
        } else {
            match f.broker.delete_group_offsets(name, None).await {
                Ok(()) => 0,
                Err(e) => e.code(),
            }
        };
        results.push(DeletableGroupResult::default().with_group_id(id.clone()).with_error_code(code));
    }
    DeleteGroupsResponse::default().with_results(results)
}
