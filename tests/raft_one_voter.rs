//! openraft itself over the qlog: a cluster of one voter is initialized,
//! elects itself, and commits planned entries through the log storage and
//! the state machine of `replicate/raft`; a proposal planned under another
//! log id than the one raft gives it is voided, stored blank, and answered
//! `Voided` with the store unchanged.

mod raft_parts;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::error::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::v2::RaftNetworkV2;
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse};
use openraft::{Config, EntryPayload, Raft, RaftLogReader, ServerState, SnapshotPolicy};
use queen::seams::log_id::LogId;
use queen::seams::message::Message;
use queen::seams::planner::Planner;
use queen::seams::planner::{Answer, Command, PushItem};
use queen::seams::raft::{to_raft, Applied, Proposed, Queen};
use queen::seams::store::Member;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A one-voter cluster has no peer to reach.
struct NoPeers;

#[derive(Debug, thiserror::Error)]
#[error("a one-voter cluster has no peers")]
struct Alone;

impl RaftNetworkFactory<Queen> for NoPeers {
    type Network = NoPeers;
    async fn new_client(&mut self, _target: u64, _node: &Member) -> NoPeers {
        NoPeers
    }
}

impl RaftNetworkV2<Queen> for NoPeers {
    type SnapshotData = PathBuf;

    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<Queen>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<Queen>, RPCError<Queen>> {
        Err(RPCError::Unreachable(Unreachable::new(&Alone)))
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<Queen>,
        _option: RPCOption,
    ) -> Result<VoteResponse<Queen>, RPCError<Queen>> {
        Err(RPCError::Unreachable(Unreachable::new(&Alone)))
    }

    async fn full_snapshot(
        &mut self,
        _vote: openraft::impls::Vote<openraft::impls::leader_id_adv::LeaderId<u64, u64>>,
        _snapshot: openraft::type_config::alias::SnapshotOf<Queen, PathBuf>,
        _cancel: impl std::future::Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<Queen>, StreamingError<Queen>> {
        Err(StreamingError::Unreachable(Unreachable::new(&Alone)))
    }
}

fn push(queue: &str, txid: &str) -> PushItem {
    PushItem::new(queue.into(), "Default".into(), &Message::new(txid.into(), txid.as_bytes().to_vec()), 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_voter_commits_planned_entries_through_the_qlog_and_voids_a_stale_plan() {
    let (_dir, machine) = raft_parts::open();
    let (store, mut log) = (machine.store.clone(), machine.log.clone());
    let config = Config {
        heartbeat_interval: 50,
        election_timeout_min: 150,
        election_timeout_max: 300,
        snapshot_policy: SnapshotPolicy::Never,
        ..Default::default()
    };
    let raft = Raft::new(1, Arc::new(config.validate().unwrap()), NoPeers, log.clone(), machine).await.unwrap();
    raft.initialize(BTreeMap::from([(1, Member::default())])).await.unwrap();
    raft.wait(Some(Duration::from_secs(10))).state(ServerState::Leader, "one voter leads").await.unwrap();
    let metrics = raft.metrics().borrow_watched().clone();
    raft.wait(Some(Duration::from_secs(10)))
        .applied_index(metrics.last_log_index, "the term's blank entry applied")
        .await
        .unwrap();

    // The planner leads in raft's term, after the last entry raft wrote (its
    // membership at raft index 0 and the term's blank entry), in qlog numbers.
    let term = metrics.current_term;
    let last = LogId::new(term, metrics.last_log_index.unwrap() + 1);
    let mut planner = Planner::new(1, last);
    planner.lead((term, 1), last);
    let planned = {
        let store = store.read().unwrap();
        planner.caught_up_with(&store);
        planner.plan(&store, Command::Push(vec![push("q", "a"), push("q", "b"), push("q", "c")]), 1_000_000)
    };
    let entry = planned.entry.expect("a push writes an entry");
    assert!(matches!(planned.answer, Answer::Pushed(ref o) if o.len() == 3));
    let proposed = Proposed { planned: entry.id, body: entry.body.clone(), messages: entry.messages.clone() };
    let written = raft.client_write(proposed).await.unwrap();
    assert_eq!(written.data, Applied::Applied);
    assert_eq!(Some(written.log_id), to_raft(entry.id, 1), "raft gave the entry the id it was planned under");
    {
        let store = store.read().unwrap();
        let q = store.queue_id("q").unwrap();
        let p = store.partition_id(q, "Default").unwrap();
        assert_eq!(store.partition(q, p).unwrap().next_offset, 3, "the three messages applied");
        assert_eq!(store.applied, entry.id);
    }

    // Planned as if another entry had come first: raft appends it at the
    // next index, which is not the one planned.
    let stale = {
        let store = store.read().unwrap();
        // The planner leads after an entry the log never got.
        planner.lead((term, 1), LogId::new(term, store.applied.index + 1));
        planner.plan(&store, Command::Push(vec![push("q", "d")]), 2_000_000).entry.unwrap()
    };
    let proposed = Proposed { planned: stale.id, body: stale.body.clone(), messages: stale.messages.clone() };
    let written = raft.client_write(proposed).await.unwrap();
    assert_eq!(written.data, Applied::Voided);
    assert_eq!(written.log_id.index + 1, stale.id.index - 1, "appended where the log was, not where it was planned");
    {
        let store = store.read().unwrap();
        let q = store.queue_id("q").unwrap();
        let p = store.partition_id(q, "Default").unwrap();
        assert_eq!(store.partition(q, p).unwrap().next_offset, 3, "the voided entry changed nothing");
    }

    // Read back as a follower would be sent them: the planned entry whole,
    // the voided one blank.
    let entries = log.try_get_log_entries(0..).await.unwrap();
    assert_eq!(entries.len() as u64, written.log_id.index + 1, "every entry from raft index 0 on");
    match &entries[entries.len() - 2].payload {
        EntryPayload::Normal(p) => {
            assert_eq!((p.planned, &p.body, &p.messages), (entry.id, &entry.body, &entry.messages))
        }
        other => panic!("the planned entry reads back as {other:?}"),
    }
    assert!(matches!(entries.last().unwrap().payload, EntryPayload::Blank), "the voided entry is stored blank");
    raft.shutdown().await.unwrap();
}
