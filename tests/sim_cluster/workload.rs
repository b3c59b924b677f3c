//! The clients: pushes with fresh transactionIds and retries (of answered
//! pushes, and of pushes whose outcome is not known), KV writes and reads,
//! Kafka transactions (`kafka_txns.rs`), a consumer group's pops and acks
//! (`pops.rs`), a share group's acquisitions and acknowledgements
//! (`shares.rs`), each sent to a node the seed picks
//! and on to the leader that node names;
//! and the model of what they were answered, which every answer is checked
//! against as it comes.

use super::kafka_txns::{TxnModel, TxnSent};
use super::kv_history::{self, KvCall, KvHistory};
use super::node::{Recorded, WRITE_TIMEOUT};
use super::pops::{PopModel, PopSent};
use super::shares::{ShareModel, ShareSent};
use queen::seams::message::Message;
use queen::seams::placement::{group_of_id, group_of_queue};
use queen::seams::planner::{Answer, Command, PushItem, PushStatus};
use queen::seams::raft::RaftReplicator;
use queen::seams::replicate::{ProposeError, Replicator};
use queen::seams::store::Store;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};

pub const QUEUES: &[&str] = &["a", "b"];
/// The queues of a placed run (`Plan::placed`): one in each data group of
/// three groups ("a" and "b" lie in the same one).
pub const PLACED_QUEUES: &[&str] = &["d", "a"];
pub const PARTITIONS: &[&str] = &["p0", "p1"];
const KV_KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"];

/// (queue, partition, transactionId).
pub type PushKey = (String, String, String);

#[derive(Default)]
pub struct Model {
    /// Every push answered, and its offset and value.
    pub acked: BTreeMap<PushKey, (u64, Vec<u8>)>,
    /// Pushes whose outcome is not known (timed out): retried later.
    unknown: BTreeSet<PushKey>,
    /// Pushes some answer said were queued (not duplicates).
    queued: BTreeSet<PushKey>,
    /// Every KV call and its answer, for the linearizability check.
    pub kv: KvHistory,
    pub txns: TxnModel,
    pub pops: PopModel,
    pub shares: ShareModel,
    pub answers: u64,
    pub unknown_outcomes: u64,
    pub violations: Vec<String>,
}

/// Each node's replicators while its process is up, group 0 first.
pub type Directory = Arc<Mutex<BTreeMap<u64, Vec<Arc<RaftReplicator<Recorded>>>>>>;

/// Each running node's store, where its Kafka front end looks up the
/// partitions a transaction adds.
pub type Stores = Arc<Mutex<BTreeMap<u64, Arc<RwLock<Store>>>>>;

pub struct Clients {
    pub model: Arc<Mutex<Model>>,
    pub directory: Directory,
    pub stores: Stores,
    next_txn: u64,
    /// The groups the queues are placed in (`Plan::placed`), if they are.
    placed: Option<u32>,
}

/// A command as sent, and what its answer is checked against.
enum Sent {
    Push(Vec<PushKey>),
    Kv(kv_history::Sent),
    Txn(TxnSent),
    Pop(PopSent),
    Share(ShareSent),
}

impl Clients {
    pub fn new(directory: Directory, placed: Option<u32>) -> Self {
        Clients { model: Arc::default(), directory, stores: Stores::default(), next_txn: 0, placed }
    }

    /// The queues the clients push to and pop from.
    fn queues(&self) -> &'static [&'static str] {
        if self.placed.is_some() {
            PLACED_QUEUES
        } else {
            QUEUES
        }
    }

    /// Sends one command the seed draws to node `to`, answered in a task
    /// of its own.
    pub fn send(&mut self, rng: &mut StdRng, to: u64) {
        let (command, sent) = self.command(rng, to);
        let group = self.placed.map_or(0, |groups| group_of(&command, groups));
        let (model, directory) = (self.model.clone(), self.directory.clone());
        tokio::spawn(async move {
            let answer = ask(&directory, to, group, command.clone()).await;
            super::node::trace(|| format!("to node {to}: {command:?}\n  => {answer:?}"));
            settle(&mut model.lock().expect("model lock"), &command, sent, answer);
        });
    }

    fn command(&mut self, rng: &mut StdRng, to: u64) -> (Command, Sent) {
        let mut model = self.model.lock().expect("model lock");
        let roll = rng.gen_range(0..100);
        if roll < 35 {
            let call = kv_call(&mut self.next_txn, rng, &model.kv);
            let command = call.command();
            return (command, Sent::Kv(model.kv.send(call)));
        }
        if (62..70).contains(&roll) {
            let Model { pops, acked, .. } = &mut *model;
            let (command, sent) = pops.next(rng, acked, self.queues());
            return (command, Sent::Pop(sent));
        }
        // A node with its groups apart refuses Kafka transactions and share
        // groups: they are not sent.
        let store = (self.placed.is_none() && (roll < 55 || (70..80).contains(&roll)))
            .then(|| self.stores.lock().expect("stores lock").get(&to).cloned())
            .flatten();
        if let (Some(store), true) = (&store, roll >= 70) {
            if let Some((command, sent)) = model.shares.next(rng, &store.read().expect("store lock")) {
                return (command, Sent::Share(sent));
            }
        }
        let store = store.filter(|_| roll < 55);
        if let Some(store) = store {
            let mut partitions: Vec<(String, String)> =
                model.acked.keys().map(|(q, p, _)| (q.clone(), p.clone())).collect();
            partitions.dedup();
            let store = store.read().expect("store lock");
            if let Some((command, sent)) = model.txns.next(rng, &partitions, &store) {
                return (command, Sent::Txn(sent));
            }
        }
        let mut keys: Vec<PushKey> = Vec::new();
        for _ in 0..rng.gen_range(1..=3) {
            let retry: Vec<&PushKey> =
                if rng.gen_bool(0.5) { model.unknown.iter().collect() } else { model.acked.keys().collect() };
            let key = match retry.choose(rng) {
                Some(key) if rng.gen_bool(0.2) => (*key).clone(),
                _ => {
                    self.next_txn += 1;
                    let q = self.queues().choose(rng).unwrap().to_string();
                    let p = PARTITIONS.choose(rng).unwrap().to_string();
                    (q, p, format!("t{}", self.next_txn))
                }
            };
            // Placed, a push names one queue, so that it is one group's.
            let same_queue = self.placed.is_none() || keys.first().is_none_or(|first| first.0 == key.0);
            if !keys.contains(&key) && same_queue {
                keys.push(key);
            }
        }
        let items =
            keys.iter().map(|(q, p, txn)| PushItem::new(q.clone(), p.clone(), &message(q, p, txn), 1)).collect();
        (Command::Push(items), Sent::Push(keys))
    }
}

/// A KV call the seed draws: reads, plain and conditional writes, and
/// checks, the conditions on versions some client was answered (or on
/// absence), so that some are refused.
fn kv_call(next_txn: &mut u64, rng: &mut StdRng, kv: &KvHistory) -> KvCall {
    let key = KV_KEYS.choose(rng).unwrap().to_string();
    let mut value = || {
        *next_txn += 1;
        format!("\"v{next_txn}\"")
    };
    let known = kv.known_versions(&key);
    let version = match known.len() {
        0 => 0,
        n if rng.gen_ratio(1, 6) => known[rng.gen_range(0..n)],
        _ if rng.gen_ratio(1, 5) => 0,
        n => known[n - 1],
    };
    match rng.gen_range(0..100) {
        0..30 => KvCall::Get(key),
        30..40 => {
            let mut keys: Vec<String> = KV_KEYS.choose_multiple(rng, 2).map(|k| k.to_string()).collect();
            keys.sort();
            KvCall::GetMany(keys)
        }
        40..70 => KvCall::Put { key, value: value() },
        70..82 => KvCall::PutAt { key, value: value(), version },
        82..88 => KvCall::PutIfAbsent { key, value: value() },
        _ => KvCall::Check { key, version },
    }
}

/// The message a push of `txn` carries: its value names where it goes.
pub fn message(queue: &str, partition: &str, txn: &str) -> Message {
    Message::new(txn.to_string(), format!("{queue}/{partition}/{txn}").into_bytes())
}

/// The group a node sends `command` to with its queues placed in `groups`
/// groups: its queue's, or group 0 for what touches no queue.
fn group_of(command: &Command, groups: u32) -> usize {
    let g = match command {
        Command::Push(items) => group_of_queue(&items[0].queue, groups),
        Command::Pop(request) => group_of_queue(request.queue.as_deref().expect("the workload pops a queue"), groups),
        Command::Ack(items) => group_of_id(items[0].queue_id, groups),
        _ => 0,
    };
    g as usize
}

/// Sends `command` to node `to`'s replicator of group `group`, which
/// forwards it to the leader it knows of (and answers `Timeout` itself past
/// the write timeout; the client's own wait is a backstop).
async fn ask(directory: &Directory, to: u64, group: usize, command: Command) -> Result<Answer, ProposeError> {
    let replicator = directory.lock().expect("directory lock").get(&to).and_then(|g| g.get(group).cloned());
    let Some(replicator) = replicator else { return Err(ProposeError::NotLeader { leader: None }) };
    let answer = tokio::time::timeout(WRITE_TIMEOUT * 2, replicator.propose(command)).await;
    answer.unwrap_or(Err(ProposeError::Timeout))
}

/// Records what `answer` promises, and checks it against what earlier
/// answers promised.
fn settle(model: &mut Model, command: &Command, sent: Sent, answer: Result<Answer, ProposeError>) {
    model.answers += 1;
    let known = !matches!(answer, Err(ProposeError::Timeout | ProposeError::ShuttingDown));
    if !known {
        model.unknown_outcomes += 1;
    }
    match (sent, answer) {
        (Sent::Push(keys), Ok(Answer::Pushed(outcomes))) => {
            for (key, out) in keys.into_iter().zip(outcomes) {
                model.unknown.remove(&key);
                // Answers cross: the first push's `Queued` may come after a
                // retry's `Duplicate`, but a key is queued once, at one offset.
                let first_queued = out.status == PushStatus::Queued && model.queued.insert(key.clone());
                match model.acked.get(&key) {
                    Some((offset, _))
                        if *offset == out.offset && (out.status == PushStatus::Duplicate || first_queued) => {}
                    Some((offset, _)) => model.violations.push(format!(
                        "a retry of {key:?}, answered at offset {offset} before, was answered {:?} at offset {}",
                        out.status, out.offset
                    )),
                    None => {
                        let value = format!("{}/{}/{}", key.0, key.1, key.2).into_bytes();
                        model.acked.insert(key, (out.offset, value));
                    }
                }
            }
        }
        (Sent::Push(keys), Err(_)) if !known => {
            model.unknown.extend(keys.into_iter().filter(|k| !model.acked.contains_key(k)));
        }
        (Sent::Kv(sent), answer) => model.kv.answered(sent, &answer),
        (Sent::Txn(sent), answer) => model.txns.settle(sent, answer, &mut model.violations),
        (Sent::Pop(PopSent::Pop { called_at }), Ok(Answer::Popped(claims))) => {
            model.pops.popped(called_at, claims, &mut model.violations)
        }
        (Sent::Pop(PopSent::Ack { completes }), Ok(Answer::Acked(outcomes))) => model.pops.acked(completes, &outcomes),
        (Sent::Share(sent), answer) => model.shares.settle(sent, answer, &mut model.violations),
        (Sent::Pop(_), Err(_)) => {}
        (Sent::Push(_), Err(_)) => {}
        (_, Ok(other)) => model.violations.push(format!("{command:?} was answered {other:?}")),
    }
}
