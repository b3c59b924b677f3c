//! DeleteShareGroupOffsets (KIP-932, `kafka-share-groups.sh
//! --delete-offsets`): an empty share group forgets where it is on each
//! topic named, and starts there again by its `share.auto.offset.reset`.

use crate::names::{str_bytes, uuid};
use crate::{Broker, Facade};
use protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use protocol::messages::{DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse};
use protocol::ResponseError;

pub async fn handle<B: Broker>(f: &Facade<B>, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse {
    let group = req.group_id.0.as_str();
    if let Err((error, why)) = super::share_group_describe::empty_share_group(f, group) {
        return DeleteShareGroupOffsetsResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(str_bytes(&why)));
    }
    let mut responses = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let name = t.topic_name.0.to_string();
        let answer = DeleteShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name.clone());
        let Some(topic) = f.broker.topic(&name) else {
            responses.push(answer.with_error_code(ResponseError::UnknownTopicOrPartition.code()));
            continue;
        };
        let answer = answer.with_topic_id(uuid(topic.id));
        responses.push(match f.broker.delete_group_offsets(group.to_string(), Some(name)).await {
            Ok(()) => answer,
            Err(e) => answer.with_error_code(e.code()).with_error_message(Some(str_bytes(&e.to_string()))),
        });
    }
    DeleteShareGroupOffsetsResponse::default().with_responses(responses)
}
