//! The simulated network between the nodes' openraft: every call is a
//! request and an answer, each delayed as the seed says (so calls in flight
//! together arrive in another order than they left), lost now and then, and
//! carried only over links that are not cut (a partition cuts every link
//! between its sides; a one-way cut only one direction). A lost call is
//! found out at its timeout, as over TCP; a call to a node that is down is
//! refused at once. Timeouts are the raft port's (`network.rs`).

use super::node::SimRaft;
use openraft::error::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::v2::RaftNetworkV2;
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::RaftStateMachine;
use queen::replicate::raft::state_machine::RaftMachine;
use queen::replicate::raft::types::Queen;
use queen::store::rows::Member;
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

type SnapshotData = <RaftMachine as RaftStateMachine<Queen>>::SnapshotData;
type RaftVote = openraft::impls::Vote<openraft::impls::leader_id_adv::LeaderId<u64, u64>>;
type Handler<T> = Box<dyn FnOnce(SimRaft) -> Pin<Box<dyn Future<Output = Result<T, String>> + Send>> + Send>;

/// As in `src/replicate/raft/network.rs`.
const APPEND_TIMEOUT_FLOOR: Duration = Duration::from_secs(5);
const OTHER_TIMEOUT_FLOOR: Duration = Duration::from_millis(50);

/// How the network behaves for a while.
#[derive(Debug, Clone, Copy)]
pub struct Weather {
    /// Calls lost, per million.
    pub loss_ppm: u32,
    /// The longest ordinary delay of one way, in microseconds.
    pub delay_us: u64,
    /// Ways delayed far longer (up to 100 times), per million.
    pub slow_ppm: u32,
}

impl Default for Weather {
    fn default() -> Self {
        Weather { loss_ppm: 0, delay_us: 2_000, slow_ppm: 0 }
    }
}

/// What the network did.
#[derive(Debug, Default, Clone, Copy)]
pub struct NetCounts {
    pub delivered: u64,
    pub lost: u64,
    pub refused: u64,
}

#[derive(Clone)]
pub struct Net(Arc<Mutex<State>>);

struct State {
    rng: StdRng,
    /// Each node's current process: its number, and its openraft while up.
    processes: BTreeMap<u64, (u64, Option<SimRaft>)>,
    /// Directed links that carry nothing.
    cut: BTreeSet<(u64, u64)>,
    weather: Weather,
    counts: NetCounts,
}

/// What becomes of one call.
enum Fate {
    Refused,
    Lost,
    Arrives { there: Duration, back: Duration },
}

impl Net {
    pub fn new(rng: StdRng) -> Self {
        Net(Arc::new(Mutex::new(State {
            rng,
            processes: BTreeMap::new(),
            cut: BTreeSet::new(),
            weather: Weather::default(),
            counts: NetCounts::default(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().expect("network lock")
    }

    /// The network client factory of node `id`'s next process.
    pub fn factory(&self, id: u64) -> Endpoint {
        let mut s = self.state();
        let process = s.processes.get(&id).map_or(1, |(p, _)| p + 1);
        s.processes.insert(id, (process, None));
        Endpoint { net: self.clone(), me: id, process }
    }

    /// Node `id`'s process is up, reached through `raft`.
    pub fn up(&self, id: u64, raft: SimRaft) {
        if let Some((_, r)) = self.state().processes.get_mut(&id) {
            *r = Some(raft);
        }
    }

    /// Node `id`'s process is gone: nothing more reaches it or leaves it.
    pub fn down(&self, id: u64) {
        if let Some((_, r)) = self.state().processes.get_mut(&id) {
            *r = None;
        }
    }

    pub fn set_weather(&self, weather: Weather) {
        self.state().weather = weather;
    }

    /// Cuts the links from `from` to `to`.
    pub fn cut(&self, from: u64, to: u64) {
        self.state().cut.insert((from, to));
    }

    pub fn heal(&self) {
        self.state().cut.clear();
    }

    pub fn counts(&self) -> NetCounts {
        self.state().counts
    }

    /// Whether `process` is node `id`'s live one.
    fn live(s: &State, id: u64, process: u64) -> bool {
        matches!(s.processes.get(&id), Some((p, Some(_))) if *p == process)
    }

    fn fate(&self, from: u64, process: u64, to: u64) -> Fate {
        let s = &mut *self.state();
        let up = matches!(s.processes.get(&to), Some((_, Some(_))));
        if !Self::live(s, from, process) || s.cut.contains(&(from, to)) {
            s.counts.lost += 1;
            return Fate::Lost;
        }
        if !up {
            s.counts.refused += 1;
            return Fate::Refused;
        }
        if s.weather.loss_ppm > 0 && s.rng.gen_range(0..1_000_000) < s.weather.loss_ppm {
            s.counts.lost += 1;
            return Fate::Lost;
        }
        let way = |s: &mut State| {
            let us = s.rng.gen_range(0..=s.weather.delay_us);
            let slow = s.weather.slow_ppm > 0 && s.rng.gen_range(0..1_000_000) < s.weather.slow_ppm;
            Duration::from_micros(if slow { us * s.rng.gen_range(10..100) } else { us })
        };
        let (there, back) = (way(s), way(s));
        Fate::Arrives { there, back }
    }

    /// `to`'s openraft, when a call from `from` reaches it now.
    fn reach(&self, from: u64, to: u64) -> Option<SimRaft> {
        let s = self.state();
        if s.cut.contains(&(from, to)) {
            return None;
        }
        s.processes.get(&to).and_then(|(_, r)| r.clone())
    }

    /// Whether an answer from `to` reaches `from`'s process `process` now.
    fn answers(&self, from: u64, process: u64, to: u64) -> bool {
        let mut s = self.state();
        let reaches = Self::live(&s, from, process) && !s.cut.contains(&(to, from));
        if reaches {
            s.counts.delivered += 1;
        } else {
            s.counts.lost += 1;
        }
        reaches
    }
}

/// One node process's side of the network.
pub struct Endpoint {
    net: Net,
    me: u64,
    process: u64,
}

impl RaftNetworkFactory<Queen> for Endpoint {
    type Network = Client;

    async fn new_client(&mut self, target: u64, _node: &Member) -> Client {
        Client { net: self.net.clone(), me: self.me, process: self.process, target }
    }
}

pub struct Client {
    net: Net,
    me: u64,
    process: u64,
    target: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Why(String);

fn unreachable(why: &str) -> RPCError<Queen> {
    RPCError::Unreachable(Unreachable::new(&Why(why.into())))
}

impl Client {
    /// Carries one call to the target and its answer back, as its fate says.
    async fn call<T: Send + 'static>(&self, timeout: Duration, handler: Handler<T>) -> Result<T, RPCError<Queen>> {
        let (net, me, process, to) = (self.net.clone(), self.me, self.process, self.target);
        let fate = net.fate(me, process, to);
        super::node::record(match &fate {
            Fate::Refused => (me, to, None),
            Fate::Lost => (me, to, Some(None)),
            Fate::Arrives { there, back } => (me, to, Some(Some((*there, *back)))),
        });
        if std::env::var("QUEEN_SIM_TRACE").is_ok_and(|v| v == "net") {
            let what = match &fate {
                Fate::Refused => "refused".to_string(),
                Fate::Lost => "lost".to_string(),
                Fate::Arrives { there, back } => format!("{there:?} there, {back:?} back"),
            };
            super::node::trace(|| format!("call {me} -> {to}: {what}"));
        }
        let (there, back) = match fate {
            Fate::Refused => {
                tokio::time::sleep(Duration::from_micros(100)).await;
                return Err(unreachable("connection refused"));
            }
            Fate::Lost => {
                tokio::time::sleep(timeout).await;
                return Err(unreachable("timed out"));
            }
            Fate::Arrives { there, back } => (there, back),
        };
        let (tx, rx) = oneshot::channel();
        // The call lives on at the target when the caller gives up on it.
        tokio::spawn(async move {
            tokio::time::sleep(there).await;
            let Some(raft) = net.reach(me, to) else { return };
            let answer = handler(raft).await;
            tokio::time::sleep(back).await;
            if net.answers(me, process, to) {
                let _ = tx.send(answer);
            }
        });
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(answer))) => Ok(answer),
            Ok(Ok(Err(remote))) => Err(RPCError::Network(NetworkError::new(&Why(remote)))),
            _ => Err(unreachable("timed out")),
        }
    }
}

impl RaftNetworkV2<Queen> for Client {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Queen>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<Queen>, RPCError<Queen>> {
        let timeout = option.hard_ttl().max(APPEND_TIMEOUT_FLOOR);
        self.call(
            timeout,
            Box::new(|raft| Box::pin(async move { raft.append_entries(rpc).await.map_err(|e| e.to_string()) })),
        )
        .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<Queen>,
        option: RPCOption,
    ) -> Result<VoteResponse<Queen>, RPCError<Queen>> {
        let timeout = option.hard_ttl().max(OTHER_TIMEOUT_FLOOR);
        self.call(timeout, Box::new(|raft| Box::pin(async move { raft.vote(rpc).await.map_err(|e| e.to_string()) })))
            .await
    }

    async fn full_snapshot(
        &mut self,
        _vote: RaftVote,
        _snapshot: openraft::type_config::alias::SnapshotOf<Queen, SnapshotData>,
        _cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<Queen>, StreamingError<Queen>> {
        Err(StreamingError::Unreachable(Unreachable::new(&Why("snapshots are not sent over raft yet".into()))))
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<Queen>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<Queen>, RPCError<Queen>> {
        let timeout = option.hard_ttl().max(OTHER_TIMEOUT_FLOOR);
        self.call(
            timeout,
            Box::new(|raft| Box::pin(async move { raft.handle_transfer_leader(req).await.map_err(|e| e.to_string()) })),
        )
        .await
    }
}
