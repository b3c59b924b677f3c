//! What travels on the raft port (`QUEEN_RAFT_ADDR`), and how: every
//! message is one frame (a 4-byte big-endian length, then the message in
//! MessagePack, with field names: self-describing, as the JSON values and
//! numbers inside planner commands need), and a connection opens with a
//! `Hello` that carries the cluster token. Requests carry an id and are answered by id, so one connection
//! carries many at once (a follower forwards every client's command over
//! the one it keeps to the leader).

use super::membership::{ChangeRefusal, MembershipChange, MembershipView};
use super::types::{Queen, RaftLogId};
use crate::planner::command::{Answer, Command};
use crate::replicate::ProposeError;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame either side reads: an append carries at most
/// openraft's `max_payload_entries` entries, each a group of messages.
pub const MAX_FRAME: u32 = 256 << 20;

/// The largest `Hello` the raft port's router reads (`port.rs`): a token
/// and two numbers.
pub const MAX_HELLO: u32 = 64 << 10;

pub type RaftVote = openraft::impls::Vote<openraft::impls::leader_id_adv::LeaderId<u64, u64>>;

/// The first frame on a connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub token: String,
    /// The node that connects.
    pub from: u64,
    /// The raft group the connection is for (`QUEEN_RAFT_GROUPS`): the
    /// raft port of a node with several routes it to that group's server
    /// (`port.rs`). A build before groups sends none, which reads as group
    /// 0, and a cluster of one group never sends another.
    #[serde(default)]
    pub group: u32,
}

/// The answer to a `Hello`: `None` when admitted, else why not.
pub type Welcome = Option<String>;

#[derive(Serialize, Deserialize)]
pub enum Request {
    Append(AppendEntriesRequest<Queen>),
    Vote(VoteRequest<Queen>),
    /// Whether the receiver would grant this vote, asked before a node
    /// raises its term (openraft's pre-vote); answered as a `Vote`. A build
    /// before it cannot read it and drops the connection: the asker counts
    /// no grant from it, and elects through the others or waits for them.
    PreVote(VoteRequest<Queen>),
    TransferLeader(TransferLeaderRequest<Queen>),
    /// A follower's client command, for the leader to plan.
    Forward(Command),
    /// A follower's read index: the leader confirms it still leads and
    /// answers the qlog index a read must have applied through.
    ReadIndex,
    /// The leader's view of the membership.
    Membership,
    ChangeMembership(MembershipChange),
    /// A piece of a snapshot's file (`snapshot_transfer.rs`).
    SnapshotChunk {
        transfer: String,
        path: String,
        offset: u64,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// The snapshot is whole: stage it, holding the log through `last`,
    /// when `vote` is the receiver's leader's.
    SnapshotDone {
        transfer: String,
        vote: RaftVote,
        last: RaftLogId,
    },
    /// The effect catalogue version the receiver's build reads
    /// (`version_gate.rs`).
    Catalogue,
}

/// Each answer, or the remote side's error as text (the caller treats it
/// as the peer failing that call).
#[derive(Serialize, Deserialize)]
pub enum Response {
    Append(Result<AppendEntriesResponse<Queen>, String>),
    Vote(Result<VoteResponse<Queen>, String>),
    TransferLeader(Result<TransferLeaderResponse<Queen>, String>),
    /// The answer, with the leader's applied index once it was given: the
    /// follower answers its client only once it has applied that far too,
    /// so the client reads its own write through the node it wrote through.
    Forwarded(Result<(Answer, u64), ProposeError>),
    ReadIndex(Result<u64, String>),
    Membership(MembershipView),
    MembershipChanged(Result<MembershipView, ChangeRefusal>),
    SnapshotChunk(Result<(), String>),
    SnapshotDone(Result<SnapshotResponse<Queen>, String>),
    Catalogue(u32),
    /// The answer to a vote, pre-vote, forwarded command or read index
    /// from a node that the receiver's committed membership, of this log
    /// id, leaves out: the asker was removed (`standing.rs`).
    NotAMember(RaftLogId),
    /// No call is answered any more (a snapshot is staged, and the node
    /// stops to install it): the caller treats it as the peer failing.
    Refused(String),
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("raft port i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("a raft frame of {0} bytes is larger than the {MAX_FRAME} allowed")]
    TooLarge(u32),
    #[error("a raft frame does not decode: {0}")]
    Decode(#[from] rmp_serde::decode::Error),
    #[error("a raft message does not encode: {0}")]
    Encode(#[from] rmp_serde::encode::Error),
}

pub async fn write_frame<T: Serialize>(w: &mut (impl AsyncWrite + Unpin), value: &T) -> Result<(), FrameError> {
    let body = rmp_serde::to_vec_named(value)?;
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLarge(u32::MAX))?;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame).await?;
    Ok(())
}

pub async fn read_frame<T: DeserializeOwned>(r: &mut (impl AsyncRead + Unpin)) -> Result<T, FrameError> {
    let len = r.read_u32().await?;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0; len as usize];
    r.read_exact(&mut body).await?;
    Ok(rmp_serde::from_slice(&body)?)
}

/// Compares two tokens in time that depends on their lengths only.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::kv::{Expiry, KvKind, KvOp};

    #[tokio::test]
    async fn a_forwarded_command_with_json_numbers_reads_back_whole() {
        // JSON numbers and values inside commands need a self-describing
        // encoding (bincode refused them, and followers' KV increments failed).
        let op = KvOp {
            ns: "ns".into(),
            kind: KvKind::Incr { key: "k".into(), delta: 7.into(), min: None, max: None, expiry: Expiry::Forever },
            required: true,
        };
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &(9u64, Request::Forward(Command::Kv(vec![op])))).await.unwrap();
        let (id, request): (u64, Request) = read_frame(&mut b).await.unwrap();
        assert_eq!(id, 9);
        let Request::Forward(Command::Kv(ops)) = request else { panic!("another request came back") };
        assert!(matches!(&ops[0].kind, KvKind::Incr { delta, .. } if delta.as_u64() == Some(7)));
    }

    #[tokio::test]
    async fn a_forwarded_kafka_transaction_request_and_its_answer_read_back_whole() {
        use crate::planner::kafka_txn::{KafkaTxnAnswer, KafkaTxnOp, TxnProducer};
        let producer = Some(TxnProducer { id: 4, epoch: 2 });
        let op = KafkaTxnOp::Init { transactional_id: "t".into(), timeout_ms: 60_000, fresh_producer_id: 9, producer };
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &(3u64, Request::Forward(Command::KafkaTxn(Box::new(op))))).await.unwrap();
        let (_, request): (u64, Request) = read_frame(&mut b).await.unwrap();
        assert!(matches!(request, Request::Forward(Command::KafkaTxn(op)) if matches!(*op, KafkaTxnOp::Init { .. })));
        let answer = Answer::KafkaTxn(KafkaTxnAnswer::Init(Ok(TxnProducer { id: 4, epoch: 3 })));
        write_frame(&mut a, &(3u64, Response::Forwarded(Ok((answer, 7))))).await.unwrap();
        let (_, response): (u64, Response) = read_frame(&mut b).await.unwrap();
        assert!(matches!(response, Response::Forwarded(Ok((Answer::KafkaTxn(KafkaTxnAnswer::Init(Ok(_))), 7)))));
    }
}
