//! The raft port's listener: admits a peer whose `Hello` carries this
//! cluster's token, then answers its requests, each in a task of its own so
//! a forwarded command that waits for its commit does not hold up the
//! heartbeats behind it.

use super::membership::{ChangeRefusal, MembershipChange, MembershipView};
use super::read_confirm::ReadConfirmer;
use super::rpc::{read_frame, same_token, write_frame, Hello, RaftVote, Request, Response, Welcome};
use super::snapshot_transfer::{Inbox, RaftPoint, SNAPSHOT_EXIT_CODE};
use super::standing;
use super::state_machine::Machine;
use super::transport::{Listener, Stream};
use super::types::{Queen, RaftLogId};
use crate::planner::command::{Answer, Command};
use crate::replicate::ProposeError;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::raft::SnapshotResponse;
use openraft::Raft;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// How long a new connection may take to introduce itself.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

pub type Forwarded = Pin<Box<dyn Future<Output = Result<Answer, ProposeError>> + Send>>;
/// A forwarded command's answer, with the leader's applied index after it.
pub type ForwardedAt = Pin<Box<dyn Future<Output = Result<(Answer, u64), ProposeError>> + Send>>;

/// What the leader does with a command a follower forwards, and with a
/// membership change.
pub trait Leader: Send + Sync + 'static {
    fn forwarded(&self, command: Command) -> ForwardedAt;
    fn change_here(&self, change: MembershipChange) -> Changed;
    fn view_here(&self) -> MembershipView;
}

pub type Changed = Pin<Box<dyn Future<Output = Result<MembershipView, ChangeRefusal>> + Send>>;

/// What a node does once a snapshot is staged and its answer sent: a
/// process exits with code 75 (`SNAPSHOT_EXIT_CODE`), for its next boot to
/// install the snapshot.
pub type StagedExit = Arc<dyn Fn() + Send + Sync>;

pub struct Server<SM: Machine> {
    pub raft: Raft<Queen, SM>,
    pub token: String,
    /// The raft group this server answers for (`QUEEN_RAFT_GROUPS`).
    pub group: u32,
    pub leader: Arc<dyn Leader>,
    /// Where a snapshot sent to this node arrives.
    pub inbox: Inbox,
    /// Set once a snapshot is staged: this process's log is the one the
    /// snapshot replaces, so it answers nothing more and exits.
    pub staged: AtomicBool,
    pub staged_exit: StagedExit,
    /// The effect catalogue version this build reads.
    pub catalogue: u32,
    /// Confirms this node's leadership for a follower's read index.
    pub reads: Arc<ReadConfirmer<SM>>,
}

/// A process's own exit once a snapshot is staged.
pub fn exit_to_install() -> StagedExit {
    Arc::new(|| std::process::exit(SNAPSHOT_EXIT_CODE))
}

impl<SM: Machine> Server<SM> {
    /// Answers the connections `listener` accepts, until it closes.
    pub async fn serve(self: Arc<Self>, mut listener: Box<dyn Listener>) {
        while let Some(accepted) = listener.accept().await {
            match accepted {
                Ok((stream, peer)) => {
                    let server = self.clone();
                    tokio::spawn(async move {
                        if let Err(e) = server.connection(stream).await {
                            tracing::debug!(%peer, error = %e, "raft connection ended");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the raft port could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    async fn connection(self: Arc<Self>, mut stream: Stream) -> Result<(), super::rpc::FrameError> {
        let hello: Hello = match tokio::time::timeout(HELLO_TIMEOUT, read_frame(&mut stream)).await {
            Ok(hello) => hello?,
            Err(_) => return Ok(()),
        };
        if !same_token(&hello.token, &self.token) {
            tracing::warn!(
                from = hello.from,
                "refused node {}'s QUEEN_RAFT_TOKEN: it differs from this node's",
                hello.from
            );
            let refusal: Welcome = Some("the token differs from this node's QUEEN_RAFT_TOKEN".into());
            return write_frame(&mut stream, &refusal).await;
        }
        if hello.group != self.group {
            let refusal: Welcome = Some(format!("this node has no raft group {}", hello.group));
            return write_frame(&mut stream, &refusal).await;
        }
        write_frame(&mut stream, &None::<String>).await?;
        let from = hello.from;
        let (mut reader, writer) = tokio::io::split(stream);
        let writer = Arc::new(tokio::sync::Mutex::new(writer));
        loop {
            let (id, request): (u64, Request) = read_frame(&mut reader).await?;
            let (server, writer) = (self.clone(), writer.clone());
            tokio::spawn(async move {
                let response = server.answer(request, from).await;
                let mut writer = writer.lock().await;
                let _ = write_frame(&mut *writer, &(id, response)).await;
                if server.staged.load(Ordering::Acquire) {
                    // The snapshot's sender has its answer: the next boot
                    // installs the snapshot (`snapshot_transfer.rs`).
                    let _ = writer.flush().await;
                    (server.staged_exit)();
                }
            });
        }
    }

    /// Stages a snapshot that arrived whole from this node's leader, then
    /// exits with code 75 once the answer is on its way: the next boot
    /// installs it (`snapshot_transfer.rs`). A snapshot from a leader this
    /// node has seen superseded is refused.
    fn stage(&self, transfer: &str, vote: RaftVote, last: RaftLogId) -> Result<SnapshotResponse<Queen>, String> {
        let mine = self.raft.metrics().borrow_watched().vote;
        if vote < mine {
            return Ok(SnapshotResponse::new(mine));
        }
        let staged = self.inbox.done(transfer, RaftPoint { last }).map_err(|e| e.to_string())?;
        tracing::warn!(
            through = %last,
            staged = %staged.display(),
            "received a snapshot from the leader: this node's log ended before the leader's begins; exiting with code {SNAPSHOT_EXIT_CODE} to install it at the next boot"
        );
        // The answer goes out first (`connection`), so the leader counts
        // the snapshot as delivered and replicates from its end.
        self.staged.store(true, Ordering::Release);
        Ok(SnapshotResponse::new(mine))
    }

    /// Answers `request` from node `from`.
    async fn answer(&self, request: Request, from: u64) -> Response {
        if self.staged.load(Ordering::Acquire) {
            return Response::Refused("this node staged a snapshot and is stopping to install it".into());
        }
        // A node removed while it ran campaigns, and forwards its clients'
        // calls, as the voter its log says it is: it is told instead.
        if let Request::Vote(_) | Request::PreVote(_) | Request::Forward(_) | Request::ReadIndex = request {
            if let Some(at) = standing::outside(&self.raft.metrics().borrow_watched(), from) {
                return Response::NotAMember(at);
            }
        }
        match request {
            Request::Append(rpc) => Response::Append(self.raft.append_entries(rpc).await.map_err(|e| e.to_string())),
            Request::Vote(rpc) => Response::Vote(self.raft.vote(rpc).await.map_err(|e| e.to_string())),
            Request::PreVote(rpc) => Response::Vote(self.raft.pre_vote(rpc).await.map_err(|e| e.to_string())),
            Request::TransferLeader(rpc) => {
                Response::TransferLeader(self.raft.handle_transfer_leader(rpc).await.map_err(|e| e.to_string()))
            }
            Request::Forward(command) => Response::Forwarded(self.leader.forwarded(command).await),
            Request::Membership => Response::Membership(self.leader.view_here()),
            Request::ChangeMembership(change) => Response::MembershipChanged(self.leader.change_here(change).await),
            Request::SnapshotChunk { transfer, path, offset, data } => {
                let taken = self.inbox.chunk(&transfer, &path, offset, &data);
                Response::SnapshotChunk(taken.map_err(|e| e.to_string()))
            }
            Request::SnapshotDone { transfer, vote, last } => Response::SnapshotDone(self.stage(&transfer, vote, last)),
            Request::Catalogue => Response::Catalogue(self.catalogue),
            Request::ReadIndex => {
                let read = self.reads.confirm().await;
                Response::ReadIndex(read.map(|confirmed| confirmed.index).map_err(|e| e.to_string()))
            }
        }
    }
}
