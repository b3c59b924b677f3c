//! The clients: pushes with fresh transactionIds and retries (of answered
//! pushes, and of pushes whose outcome is not known), KV writes and reads,
//! each sent to a node the seed picks and on to the leader that node names;
//! and the model of what they were answered, which every answer is checked
//! against as it comes.

use super::proposer::Ask;
use queen::message::Message;
use queen::planner::command::{Answer, Command, PushItem, PushStatus};
use queen::planner::kv::{Expiry, KvAnswer, KvKind, KvOp, KvResult};
use queen::replicate::ProposeError;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

pub const QUEUES: &[&str] = &["a", "b"];
pub const PARTITIONS: &[&str] = &["p0", "p1"];
pub const KV_NS: &str = "sim";
const KV_KEYS: &[&str] = &["k0", "k1", "k2"];
/// How long a client waits for an answer (`QUEEN_RAFT_WRITE_TIMEOUT_MS`).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many nodes a command is sent to at most, following `NotLeader`.
const HOPS: usize = 3;

/// (queue, partition, transactionId).
pub type PushKey = (String, String, String);

/// One KV write, in the order writes to its key were sent (one at a time).
struct Put {
    value: String,
    /// Answered as applied.
    applied: bool,
}

#[derive(Default)]
pub struct Model {
    /// Every push answered, and its offset and value.
    pub acked: BTreeMap<PushKey, (u64, Vec<u8>)>,
    /// Pushes whose outcome is not known (timed out): retried later.
    unknown: BTreeSet<PushKey>,
    /// Per KV key, its writes in order.
    puts: BTreeMap<String, Vec<Put>>,
    /// Keys with a write in flight: one at a time per key, so the order
    /// writes were sent is the order they can apply in.
    writing: BTreeSet<String>,
    pub answers: u64,
    pub unknown_outcomes: u64,
    pub violations: Vec<String>,
}

impl Model {
    /// The value a KV key must hold once every write has settled: the last
    /// answered write's, or any later write's that was never answered; with
    /// no write answered, also none.
    pub fn kv_allowed(&self, key: &str) -> Option<(Vec<Option<String>>, bool)> {
        let puts = self.puts.get(key)?;
        let last = puts.iter().rposition(|p| p.applied);
        let allowed = puts[last.unwrap_or(0)..].iter().map(|p| Some(p.value.clone())).collect();
        Some((allowed, last.is_none()))
    }

    pub fn kv_keys(&self) -> Vec<String> {
        self.puts.keys().cloned().collect()
    }
}

/// Where each node's proposer is reached while its process is up.
pub type Directory = Arc<Mutex<BTreeMap<u64, mpsc::UnboundedSender<Ask>>>>;

pub struct Clients {
    pub model: Arc<Mutex<Model>>,
    pub directory: Directory,
    next_txn: u64,
}

/// A command as sent, and what its answer is checked against.
enum Sent {
    Push(Vec<PushKey>),
    Put {
        key: String,
        at: usize,
    },
    /// A read of `key`, sent when the last answered write was `floor`.
    Get {
        key: String,
        floor: Option<usize>,
    },
}

impl Clients {
    pub fn new(directory: Directory) -> Self {
        Clients { model: Arc::default(), directory, next_txn: 0 }
    }

    /// Sends one command the seed draws to node `to`, answered in a task
    /// of its own.
    pub fn send(&mut self, rng: &mut StdRng, to: u64) {
        let (command, sent) = self.command(rng);
        let (model, directory) = (self.model.clone(), self.directory.clone());
        tokio::spawn(async move {
            let answer = ask(&directory, to, command.clone()).await;
            super::node::trace(|| format!("to node {to}: {command:?}\n  => {answer:?}"));
            settle(&mut model.lock().expect("model lock"), &command, sent, answer);
        });
    }

    fn command(&mut self, rng: &mut StdRng) -> (Command, Sent) {
        let mut model = self.model.lock().expect("model lock");
        if rng.gen_range(0..100) < 25 {
            let key = KV_KEYS.choose(rng).unwrap().to_string();
            if rng.gen_bool(0.5) && !model.writing.contains(&key) {
                self.next_txn += 1;
                let value = format!("\"v{}\"", self.next_txn);
                let puts = model.puts.entry(key.clone()).or_default();
                puts.push(Put { value: value.clone(), applied: false });
                let at = puts.len() - 1;
                model.writing.insert(key.clone());
                let kind = KvKind::Put { key: key.clone(), value, expiry: Expiry::Forever, expect: None };
                return (kv(kind), Sent::Put { key, at });
            }
            let floor = model.puts.get(&key).and_then(|p| p.iter().rposition(|p| p.applied));
            return (kv(KvKind::Get { key: key.clone() }), Sent::Get { key, floor });
        }
        let mut keys = Vec::new();
        for _ in 0..rng.gen_range(1..=3) {
            let retry: Vec<&PushKey> =
                if rng.gen_bool(0.5) { model.unknown.iter().collect() } else { model.acked.keys().collect() };
            let key = match retry.choose(rng) {
                Some(key) if rng.gen_bool(0.2) => (*key).clone(),
                _ => {
                    self.next_txn += 1;
                    let q = QUEUES.choose(rng).unwrap().to_string();
                    let p = PARTITIONS.choose(rng).unwrap().to_string();
                    (q, p, format!("t{}", self.next_txn))
                }
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let items =
            keys.iter().map(|(q, p, txn)| PushItem::new(q.clone(), p.clone(), &message(q, p, txn), 1)).collect();
        (Command::Push(items), Sent::Push(keys))
    }
}

fn kv(kind: KvKind) -> Command {
    Command::Kv(vec![KvOp { ns: KV_NS.into(), kind, required: true }])
}

/// The message a push of `txn` carries: its value names where it goes.
pub fn message(queue: &str, partition: &str, txn: &str) -> Message {
    Message::new(txn.to_string(), format!("{queue}/{partition}/{txn}").into_bytes())
}

/// Sends `command` to node `to`, and on to the leader it names.
async fn ask(directory: &Directory, mut to: u64, command: Command) -> Result<Answer, ProposeError> {
    let mut outcome = Err(ProposeError::NotLeader { leader: None });
    for _ in 0..HOPS {
        let (reply, answer) = oneshot::channel();
        let sent = directory
            .lock()
            .expect("directory lock")
            .get(&to)
            .is_some_and(|tx| tx.send(Ask { command: command.clone(), reply }).is_ok());
        if !sent {
            return Err(ProposeError::NotLeader { leader: None });
        }
        outcome = match tokio::time::timeout(WRITE_TIMEOUT, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(ProposeError::ShuttingDown),
            Err(_) => Err(ProposeError::Timeout),
        };
        match outcome {
            Err(ProposeError::NotLeader { leader: Some(leader) }) if leader != to => to = leader,
            _ => return outcome,
        }
    }
    outcome
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
                match model.acked.get(&key) {
                    Some((offset, _)) if *offset == out.offset && out.status == PushStatus::Duplicate => {}
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
        (Sent::Put { key, at }, answer) => {
            model.writing.remove(&key);
            match answer {
                Ok(Answer::Kv(KvAnswer::Results(results)))
                    if matches!(results.as_slice(), [KvResult::Write { applied: Ok(()), .. }]) =>
                {
                    model.puts.get_mut(&key).expect("a sent write")[at].applied = true;
                }
                // Refused before it was planned: it never applies.
                Err(ProposeError::NotLeader { .. }) => {
                    model.puts.get_mut(&key).expect("a sent write")[at].value = String::new();
                }
                Err(_) => {}
                Ok(other) => model.violations.push(format!("KV write of {key} answered {other:?}")),
            }
        }
        (Sent::Get { key, floor }, Ok(Answer::Kv(KvAnswer::Results(results)))) => {
            let read = match results.as_slice() {
                [KvResult::Get { row, .. }] => row.as_ref().map(|r| r.value.clone()),
                other => {
                    model.violations.push(format!("KV read of {key} answered {other:?}"));
                    return;
                }
            };
            let puts = model.puts.get(&key).map(Vec::as_slice).unwrap_or_default();
            let at = read.as_ref().and_then(|v| puts.iter().position(|p| p.value == *v));
            let stale = match (floor, at) {
                (Some(floor), Some(at)) => at < floor,
                (Some(_), None) => true,
                (None, _) => read.is_some() && at.is_none(),
            };
            if stale {
                let floor = floor.map(|f| puts[f].value.clone());
                model.violations.push(format!(
                    "KV read of {key} answered {read:?}, after the write of {floor:?} was answered: a stale or unknown value"
                ));
            }
        }
        (Sent::Push(_) | Sent::Get { .. }, Err(_)) => {}
        (_, Ok(other)) => model.violations.push(format!("{command:?} was answered {other:?}")),
    }
}
