//! openraft's network over the raft port: one `Link` per peer, shared by
//! every client openraft makes for it (replication, heartbeats, votes).

use super::link::{Link, LinkError};
use super::rpc::{Hello, Request, Response};
use super::snapshot_transfer;
use super::standing::Standing;
use super::transport::Transport;
use super::types::Queen;
use crate::storage::Storage;
use crate::store::rows::Member;
use openraft::error::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::v2::RaftNetworkV2;
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type RaftVote = openraft::impls::Vote<openraft::impls::leader_id_adv::LeaderId<u64, u64>>;

/// Every peer's link, by node id and raft address (a member that moved gets
/// a new one).
type Links = HashMap<(u64, String), Arc<Link>>;

#[derive(Clone)]
pub struct Peers {
    links: Arc<Mutex<Links>>,
    /// What this node's connections open with: its id, the cluster token
    /// and the group these peers are for.
    hello: Hello,
    transport: Arc<dyn Transport>,
    /// Where the snapshots it sends are read from.
    storage: Arc<dyn Storage>,
    /// When a refused token was last logged, so a cut-off node says so once
    /// a minute, not at every heartbeat.
    refused_logged: Arc<Mutex<Option<Instant>>>,
    /// Told when a peer answers a vote that this node was removed.
    standing: Arc<Standing>,
}

impl Peers {
    pub fn new(
        hello: Hello,
        transport: Arc<dyn Transport>,
        storage: Arc<dyn Storage>,
        standing: Arc<Standing>,
    ) -> Self {
        Self { links: Arc::default(), hello, transport, storage, refused_logged: Arc::default(), standing }
    }

    /// The link to `target` at `raft`.
    pub fn link(&self, target: u64, raft: &str) -> Arc<Link> {
        let mut links = self.links.lock().expect("peer links lock");
        links
            .entry((target, raft.to_string()))
            .or_insert_with(|| Arc::new(Link::new(raft.to_string(), self.hello.clone(), self.transport.clone())))
            .clone()
    }
}

pub struct PeerClient {
    link: Arc<Link>,
    peers: Peers,
}

impl RaftNetworkFactory<Queen> for Peers {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &Member) -> PeerClient {
        PeerClient { link: self.link(target, &node.raft), peers: self.clone() }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Remote(String);

/// The least time an append is given. openraft gives every append the
/// heartbeat interval (100 ms here), which a follower fdatasyncing a large
/// batch on a busy machine overruns: the append then failed, was sent
/// again, and throughput fell (the three-node bench's first run). A slow
/// append is not a lost peer; heartbeats and elections judge that.
const APPEND_TIMEOUT_FLOOR: Duration = Duration::from_secs(5);

impl PeerClient {
    async fn call(&self, request: Request, option: &RPCOption) -> Result<Response, RPCError<Queen>> {
        let floor = match request {
            Request::Append(_) | Request::SnapshotChunk { .. } | Request::SnapshotDone { .. } => APPEND_TIMEOUT_FLOOR,
            _ => Duration::from_millis(50),
        };
        let timeout = option.hard_ttl().max(floor);
        self.link.call(request, timeout).await.map_err(|e| {
            if let LinkError::Refused { .. } = &e {
                let mut logged = self.peers.refused_logged.lock().expect("refused log lock");
                if logged.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                    tracing::error!(error = %e, "a peer refused this node's QUEEN_RAFT_TOKEN: give every node the same value and restart this one");
                    *logged = Some(Instant::now());
                }
            }
            RPCError::Unreachable(Unreachable::new(&e))
        })
    }

    /// A vote or pre-vote; a peer whose membership leaves this node out
    /// answers that instead, which counts as no grant (`standing.rs`).
    async fn ballot(&self, request: Request, option: &RPCOption) -> Result<VoteResponse<Queen>, RPCError<Queen>> {
        match self.call(request, option).await? {
            Response::Vote(r) => r.map_err(remote),
            Response::NotAMember(at) => {
                self.peers.standing.told(at);
                Err(remote(format!("the peer's membership {at} leaves this node out")))
            }
            _ => Err(unexpected()),
        }
    }
}

fn remote(e: String) -> RPCError<Queen> {
    RPCError::Network(NetworkError::new(&Remote(e)))
}

fn unexpected() -> RPCError<Queen> {
    remote("the peer answered another kind of call".into())
}

impl RaftNetworkV2<Queen> for PeerClient {
    type SnapshotData = PathBuf;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Queen>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<Queen>, RPCError<Queen>> {
        match self.call(Request::Append(rpc), &option).await? {
            Response::Append(r) => r.map_err(remote),
            _ => Err(unexpected()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<Queen>,
        option: RPCOption,
    ) -> Result<VoteResponse<Queen>, RPCError<Queen>> {
        self.ballot(Request::Vote(rpc), &option).await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<Queen>,
        option: RPCOption,
    ) -> Result<VoteResponse<Queen>, RPCError<Queen>> {
        self.ballot(Request::PreVote(rpc), &option).await
    }

    /// Sends the snapshot's files chunk by chunk, then asks the receiver to
    /// stage it; ends early when openraft closes the replication (this node
    /// no longer leads, or stops), which would otherwise wait out each
    /// chunk's timeout against a peer that may be gone.
    async fn full_snapshot(
        &mut self,
        vote: RaftVote,
        snapshot: openraft::type_config::alias::SnapshotOf<Queen, PathBuf>,
        cancel: impl std::future::Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<Queen>, StreamingError<Queen>> {
        let unreachable = |why: String| StreamingError::Unreachable(Unreachable::new(&Remote(why)));
        let last = snapshot.meta.last_log_id.ok_or_else(|| unreachable("a snapshot of nothing".into()))?;
        let dir = snapshot.snapshot;
        // The copy's directory is named for it (`state_machine.rs`).
        let transfer = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let chunks = snapshot_transfer::chunks(self.peers.storage.clone(), &dir, &transfer)
            .map_err(|e| unreachable(e.to_string()))?;
        let send = async {
            for chunk in chunks {
                let chunk = chunk.map_err(|e| unreachable(format!("{}: {e}", dir.display())))?;
                let answer = self.call(chunk, &option).await.map_err(|e| unreachable(e.to_string()))?;
                snapshot_transfer::chunk_taken(answer).map_err(unreachable)?;
            }
            tracing::info!(snapshot = %transfer, through = %last, "sent a snapshot");
            match self.call(Request::SnapshotDone { transfer, vote, last }, &option).await {
                Ok(Response::SnapshotDone(r)) => r.map_err(unreachable),
                Ok(_) => Err(unreachable("the peer answered another kind of call".into())),
                Err(e) => Err(unreachable(e.to_string())),
            }
        };
        tokio::select! {
            biased;
            closed = cancel => Err(StreamingError::Closed(closed)),
            sent = send => sent,
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<Queen>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<Queen>, RPCError<Queen>> {
        match self.call(Request::TransferLeader(req), &option).await? {
            Response::TransferLeader(r) => r.map_err(remote),
            _ => Err(unexpected()),
        }
    }
}
