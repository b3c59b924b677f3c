//! One handler per Kafka API. Each takes the decoded request and its version
//! and answers the response body; errors travel inside the body as Kafka
//! error codes, per topic, partition or group, as the protocol places them.

mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod alter_configs;
mod alter_share_group_offsets;
mod api_versions;
mod authorize;
mod cluster_brokers;
mod commit_fence;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_partitions;
mod create_topics;
mod delete_groups;
mod delete_records;
mod delete_share_group_offsets;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod describe_groups;
mod describe_share_group_offsets;
mod describe_transactions;
mod end_txn;
mod fetch;
mod find_coordinator;
mod heartbeat;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_groups;
mod list_offsets;
mod list_transactions;
mod metadata;
mod not_coordinator;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
mod produce;
mod refused;
mod sasl_authenticate;
mod sasl_handshake;
mod share_acknowledge;
mod share_acks;
mod share_fetch;
mod share_group_describe;
mod share_group_heartbeat;
mod sync_group;
mod txn_errors;
mod txn_offset_commit;

use crate::sasl::{Role, Session};
use crate::share_sessions::ConnectionId;
use crate::{Broker, Facade};
use protocol::messages::ApiKey;
use protocol::messages::{RequestKind, ResponseKind};
use protocol::request::Request;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

pub enum Reply {
    Answer(Box<ResponseKind>),
    /// A fetch answer some of whose record sets are sent from stored files.
    Spliced(Box<ResponseKind>, Vec<crate::spliced::Splice>),
    /// A produce handed to the broker: its place among the connection's
    /// writes is fixed, and the future answers once it is durable.
    Pending(Pin<Box<dyn Future<Output = Reply> + Send>>),
    /// Produce with acks=0: the client expects no answer.
    Silent,
    /// A request the versions table admitted but no handler serves: a bug,
    /// reported and answered by closing the connection.
    Unhandled(String),
    /// A request this connection may not make (before SASL authentication):
    /// the connection is closed, as Kafka does.
    Refuse(String),
}

/// `connection` numbers the connection the request came on (a share
/// session belongs to the one that opened it).
pub async fn handle<B: Broker>(
    f: &Facade<B>,
    req: Request,
    peer: SocketAddr,
    connection: ConnectionId,
    session: &mut Session,
) -> Reply {
    let v = req.version;
    let before_authentication =
        matches!(req.api_key, ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate);
    if f.config.sasl.is_some() && !before_authentication {
        if !session.authenticated() {
            return Reply::Refuse(format!("{:?} before SASL authentication", req.api_key));
        }
        if session.expired(sasl_authenticate::now_ms()) {
            return Reply::Refuse(format!("{:?} after the token expired, without authenticating again", req.api_key));
        }
    }
    // A listener without SASL is open: every client may do everything.
    let role = session.principal().map_or(Role::Admin, |p| p.role);
    if role < authorize::required_role(&req.body) {
        if let Some(answer) = authorize::denied(&req.body, v) {
            let principal = session.principal().map(|p| p.name.as_str()).unwrap_or_default();
            tracing::debug!(%peer, principal, role = role.name(), api = ?req.api_key, "kafka request denied");
            if matches!(&req.body, RequestKind::Produce(p) if p.acks == 0) {
                // acks=0 reads no answer; a Kafka broker closes the connection so the producer notices.
                return Reply::Refuse(format!("produce with acks=0 by {principal:?}, whose role may not produce"));
            }
            return Reply::Answer(Box::new(answer));
        }
    }
    // Asked for group requests only: produce and fetch never pay for it.
    if not_coordinator::is_member_call(&req.body) {
        let coordinator = f.broker.group_coordinator();
        if coordinator != crate::GroupCoordinator::Here {
            let available = coordinator != crate::GroupCoordinator::NotAvailable;
            if let Some(answer) = not_coordinator::answer(&req.body, available) {
                return Reply::Answer(Box::new(answer));
            }
        }
    }
    // A version admitted only to be refused gets its refusal, whatever
    // the API's handler would make of it.
    if protocol::versions::is_refused(req.api_key, v) {
        return match refused::answer(&req.body, v) {
            Some(answer) => Reply::Answer(Box::new(answer)),
            None => Reply::Unhandled(format!("{:?} v{v} is refused but has no refusal", req.api_key)),
        };
    }
    let producer = session.principal().and_then(|p| p.subject.clone());
    let client = req.client_id().to_string();
    let body = match req.body {
        RequestKind::ApiVersions(r) => ResponseKind::ApiVersions(api_versions::handle(r, v)),
        RequestKind::Metadata(r) => ResponseKind::Metadata(metadata::handle(f, r, v, role >= Role::ReadWrite).await),
        RequestKind::Produce(r) => return produce::handle(f, r, v, producer).await,
        RequestKind::Fetch(r) => {
            let (answer, splices) = fetch::handle(f, r, v).await;
            if !splices.is_empty() {
                return Reply::Spliced(Box::new(ResponseKind::Fetch(answer)), splices);
            }
            ResponseKind::Fetch(answer)
        }
        RequestKind::ListOffsets(r) => ResponseKind::ListOffsets(list_offsets::handle(f, r, v).await),
        RequestKind::FindCoordinator(r) => ResponseKind::FindCoordinator(find_coordinator::handle(f, r, v)),
        RequestKind::JoinGroup(r) => ResponseKind::JoinGroup(join_group::handle(f, r, v, &client, peer).await),
        RequestKind::SyncGroup(r) => ResponseKind::SyncGroup(sync_group::handle(f, r, v).await),
        RequestKind::Heartbeat(r) => ResponseKind::Heartbeat(heartbeat::handle(f, r)),
        RequestKind::LeaveGroup(r) => ResponseKind::LeaveGroup(leave_group::handle(f, r, v)),
        RequestKind::ConsumerGroupHeartbeat(r) => {
            ResponseKind::ConsumerGroupHeartbeat(consumer_group_heartbeat::handle(f, r, v, &client, peer).await)
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            ResponseKind::ConsumerGroupDescribe(consumer_group_describe::handle(f, r).await)
        }
        RequestKind::ShareGroupHeartbeat(r) => {
            ResponseKind::ShareGroupHeartbeat(share_group_heartbeat::handle(f, r, &client, peer).await)
        }
        RequestKind::ShareGroupDescribe(r) => ResponseKind::ShareGroupDescribe(share_group_describe::handle(f, r)),
        RequestKind::ShareFetch(r) => {
            let (answer, splices) = share_fetch::handle(f, r, connection).await;
            if !splices.is_empty() {
                return Reply::Spliced(Box::new(ResponseKind::ShareFetch(answer)), splices);
            }
            ResponseKind::ShareFetch(answer)
        }
        RequestKind::ShareAcknowledge(r) => ResponseKind::ShareAcknowledge(share_acknowledge::handle(f, r).await),
        RequestKind::DescribeShareGroupOffsets(r) => {
            ResponseKind::DescribeShareGroupOffsets(describe_share_group_offsets::handle(f, r))
        }
        RequestKind::AlterShareGroupOffsets(r) => {
            ResponseKind::AlterShareGroupOffsets(alter_share_group_offsets::handle(f, r).await)
        }
        RequestKind::DeleteShareGroupOffsets(r) => {
            ResponseKind::DeleteShareGroupOffsets(delete_share_group_offsets::handle(f, r).await)
        }
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(offset_commit::handle(f, r).await),
        RequestKind::OffsetFetch(r) => ResponseKind::OffsetFetch(offset_fetch::handle(f, r, v).await),
        RequestKind::OffsetDelete(r) => ResponseKind::OffsetDelete(offset_delete::handle(f, r).await),
        RequestKind::ListGroups(r) => ResponseKind::ListGroups(list_groups::handle(f, r, v)),
        RequestKind::DescribeGroups(r) => ResponseKind::DescribeGroups(describe_groups::handle(f, r, v)),
        RequestKind::DeleteGroups(r) => ResponseKind::DeleteGroups(delete_groups::handle(f, r).await),
        RequestKind::CreateTopics(r) => ResponseKind::CreateTopics(create_topics::handle(f, r, v).await),
        RequestKind::DeleteTopics(r) => ResponseKind::DeleteTopics(delete_topics::handle(f, r, v).await),
        RequestKind::CreatePartitions(r) => ResponseKind::CreatePartitions(create_partitions::handle(f, r).await),
        RequestKind::DeleteRecords(r) => ResponseKind::DeleteRecords(delete_records::handle(f, r)),
        RequestKind::InitProducerId(r) => ResponseKind::InitProducerId(init_producer_id::handle(f, r, v).await),
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(add_partitions_to_txn::handle(f, r, v).await)
        }
        RequestKind::AddOffsetsToTxn(r) => ResponseKind::AddOffsetsToTxn(add_offsets_to_txn::handle(f, r, v).await),
        RequestKind::EndTxn(r) => ResponseKind::EndTxn(end_txn::handle(f, r, v).await),
        RequestKind::TxnOffsetCommit(r) => ResponseKind::TxnOffsetCommit(txn_offset_commit::handle(f, r, v).await),
        RequestKind::DescribeTransactions(r) => ResponseKind::DescribeTransactions(describe_transactions::handle(f, r)),
        RequestKind::ListTransactions(r) => ResponseKind::ListTransactions(list_transactions::handle(f, r)),
        RequestKind::OffsetForLeaderEpoch(r) => {
            ResponseKind::OffsetForLeaderEpoch(offset_for_leader_epoch::handle(f, r).await)
        }
        RequestKind::DescribeConfigs(r) => ResponseKind::DescribeConfigs(describe_configs::handle(f, r)),
        RequestKind::AlterConfigs(r) => ResponseKind::AlterConfigs(alter_configs::handle(f, r).await),
        RequestKind::IncrementalAlterConfigs(r) => {
            ResponseKind::IncrementalAlterConfigs(alter_configs::handle_incremental(f, r).await)
        }
        RequestKind::DescribeCluster(r) => ResponseKind::DescribeCluster(describe_cluster::handle(f, r)),
        RequestKind::SaslHandshake(r) => ResponseKind::SaslHandshake(sasl_handshake::handle(f, r, v, session)),
        RequestKind::SaslAuthenticate(r) => ResponseKind::SaslAuthenticate(sasl_authenticate::handle(f, r, session)),
        other => return Reply::Unhandled(format!("{other:?}").chars().take(60).collect()),
    };
    Reply::Answer(Box::new(body))
}

/// A bare SASL token (after SaslHandshake v0) and the size-prefixed reply
/// to write, or why the connection closes.
pub fn bare_sasl_token<B: Broker>(f: &Facade<B>, token: &[u8], session: &mut Session) -> Result<Vec<u8>, String> {
    let reply = sasl_authenticate::bare(f, token, session)?;
    let mut framed = Vec::with_capacity(4 + reply.len());
    framed.extend_from_slice(&(reply.len() as u32).to_be_bytes());
    framed.extend_from_slice(&reply);
    Ok(framed)
}

/// Per-partition answers grouped under their topics, topics in the order
/// they first appear: the nesting every per-partition response has.
fn by_topic<P>(answers: impl IntoIterator<Item = (String, P)>) -> Vec<(String, Vec<P>)> {
    let mut topics: Vec<(String, Vec<P>)> = Vec::new();
    for (topic, answer) in answers {
        match topics.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, partitions)) => partitions.push(answer),
            None => topics.push((topic, vec![answer])),
        }
    }
    topics
}
