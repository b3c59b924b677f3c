//! One simulated run from one seed: a workload of pushes (with fresh and
//! retried transactionIds), pops under leases that expire, acks, KV writes
//! and reads, and timers scheduled, cancelled and fired, with
//! group commits, checkpoints, crashes and storage faults where the seed
//! puts them; after every recovery, the invariants are checked against a
//! model of what was answered.

use super::digest::digest;
use super::node::{nowhere, SimNode, Stopped};
use super::storage::{Crash, FaultCounts, Faults, SimStorage};
use queen::seams::log_id::LogId;
use queen::seams::message::Message;
use queen::seams::planner::apply;
use queen::seams::planner::Entry;
use queen::seams::planner::{row_key, Expiry, KvAnswer, KvKind, KvOp, KvResult};
use queen::seams::planner::{
    AckItem, AckStatus, Answer, Command, PopRequest, PushBody, PushItem, PushStatus, Subscription,
};
use queen::seams::planner::{TimerOp, TimerResult, TimerVerb};
use queen::seams::store::Store;
use queen::seams::store::{Member, Membership};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

const QUEUES: &[&str] = &["a", "b", "c"];
const PARTITIONS: &[&str] = &["p0", "p1"];
const GROUP: &str = "g";
const LEASE_US: i64 = 2_000_000;
const KV_NS: &str = "sim";
const KV_KEYS: &[&str] = &["k0", "k1", "k2"];
/// The queue and partition timers fire into.
const TIMER_QUEUE: &str = "t";

/// How a run is shaped.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub steps: usize,
    /// Per step, in parts per thousand.
    pub crash_ppt: u32,
    pub checkpoint_ppt: u32,
    /// How often a stretch of steps runs with faults armed.
    pub faults_ppt: u32,
    pub segment_bytes: u64,
    /// The broken variant: every fdatasync is skipped, so writes are
    /// answered before they are durable. The checks must catch it.
    pub answer_before_sync: bool,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            steps: 120,
            crash_ppt: 40,
            checkpoint_ppt: 100,
            faults_ppt: 30,
            segment_bytes: 4096,
            answer_before_sync: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    pub commits: u64,
    pub acked_pushes: u64,
    pub recoveries: u64,
    pub stops: u64,
    /// Group commits that sealed idle logs' files by age.
    pub idle_seals: u64,
    /// Terms led: one at the start and one after every boot.
    pub terms: u64,
    /// Boots whose replay stopped at a committed index before the log's
    /// end, leaving durable entries for the new term to commit.
    pub short_replays: u64,
    pub faults: FaultCounts,
}

/// What the clients were told, and what must therefore hold.
#[derive(Default)]
struct Model {
    /// (queue, partition, transactionId) → (offset, value) of every push answered.
    acked: BTreeMap<(String, String, String), (u64, Vec<u8>)>,
    /// (queue id, partition id, offset) → transactionId, of every push answered.
    by_offset: BTreeMap<(u64, u64, u64), String>,
    /// (queue id, partition id) → (lease id, expiry, messages) of leases answered and not released.
    leases: BTreeMap<(u64, u64), (String, i64, Vec<u64>)>,
    /// KV key → the value of the last write answered; none once a write
    /// that was never answered may have changed it.
    kv: BTreeMap<String, Option<String>>,
    /// Timer key → its transactionId, of every schedule answered and not cancelled.
    timers: BTreeMap<String, String>,
    /// TransactionId → when it may fire at the earliest, of every schedule answered.
    timers_due: BTreeMap<String, i64>,
    /// The timers a cancel reported removing: they never fire.
    timers_cancelled: BTreeSet<String>,
}

pub struct Run {
    seed: u64,
    rng: StdRng,
    plan: Plan,
    storage: SimStorage,
    checkpoint_dir: tempfile::TempDir,
    /// None only while it reboots: its checkpoint must be closed first.
    node: Option<SimNode>,
    now_us: i64,
    next_txn: u64,
    model: Model,
    /// Every entry planned, by index: the reference run applies those the
    /// logs kept.
    history: BTreeMap<u64, Entry>,
    /// Entries of batches that stopped the node: never answered, and kept
    /// or cut by the next recovery.
    unanswered: BTreeSet<u64>,
    outcome: Outcome,
}

impl Run {
    pub fn new(seed: u64, plan: Plan) -> Self {
        let storage = SimStorage::new(seed, &[Path::new("/sim")]);
        if plan.answer_before_sync {
            storage.lie_about_syncs();
        }
        let checkpoint_dir = tempfile::tempdir().expect("a checkpoint directory");
        let node = SimNode::boot(&storage, checkpoint_dir.path(), plan.segment_bytes)
            .unwrap_or_else(|e| panic!("seed {seed}: a new node refused to boot: {e}"));
        let mut run = Run {
            seed,
            rng: StdRng::seed_from_u64(seed ^ 0x5eed),
            plan,
            storage,
            checkpoint_dir,
            node: Some(node),
            now_us: 1_700_000_000_000_000,
            next_txn: 0,
            model: Model::default(),
            history: BTreeMap::new(),
            unanswered: BTreeSet::new(),
            outcome: Outcome::default(),
        };
        run.lead_new_term();
        run
    }

    /// The node leads a new term after its boot, as a single voter does;
    /// every third time it also writes a membership entry.
    fn lead_new_term(&mut self) {
        let learner = 2 + self.outcome.recoveries;
        let membership = (self.outcome.recoveries % 3 == 1).then(|| Membership {
            configs: vec![vec![1]],
            members: vec![(1, Member::default()), (learner, Member::default())],
        });
        let now_us = self.now_us;
        match self.node_mut().lead_new_term(now_us, membership) {
            Ok(entries) => {
                self.outcome.terms += 1;
                trace(|| format!("leads term {} from entry {}", entries[0].id.term, entries[0].id.index));
                self.history.extend(entries.into_iter().map(|e| (e.id.index, e)));
            }
            Err(Stopped(e)) => self.violation(&format!("a new term could not begin with no fault injected: {e}")),
        }
    }

    pub fn go(mut self) -> Outcome {
        let mut faulty_steps = 0;
        for _ in 0..self.plan.steps {
            self.now_us += self.rng.gen_range(1_000..800_000);
            if faulty_steps == 0 && self.rng.gen_range(0..1000) < self.plan.faults_ppt {
                faulty_steps = self.rng.gen_range(1..6);
                self.storage.arm(Faults { write_fails_ppm: 60_000, sync_fails_ppm: 60_000, read_flips_ppm: 0 });
            }
            if faulty_steps > 0 {
                faulty_steps -= 1;
                if faulty_steps == 0 {
                    self.storage.arm(Faults::default());
                }
            }
            let commands = self.commands();
            let now_us = self.now_us;
            let (entries, answered) = self.node_mut().commit(commands.clone(), now_us);
            if answered.is_err() {
                self.unanswered.extend(entries.iter().map(|e| e.id.index));
            }
            for e in entries {
                self.history.insert(e.id.index, e);
            }
            match answered {
                Ok(answers) => {
                    self.outcome.commits += 1;
                    for (c, a) in commands.iter().zip(answers) {
                        self.answered(c, a);
                    }
                    // Then the committed index is saved, lazily, as openraft's
                    // save_committed may be: a boot replays through it and
                    // the next term commits the rest.
                    if self.rng.gen_range(0..4) == 0 {
                        let applied = self.node().store.applied;
                        if let Err(Stopped(e)) = self.node_mut().save_committed(applied) {
                            self.stopped(e, faulty_steps);
                            faulty_steps = 0;
                            continue;
                        }
                    }
                }
                Err(Stopped(e)) => {
                    // A write never answered may or may not have committed.
                    for c in &commands {
                        if let Command::Kv(ops) = c {
                            for op in ops {
                                if let KvKind::Put { key, .. } = &op.kind {
                                    self.model.kv.insert(key.clone(), None);
                                }
                            }
                        }
                    }
                    self.stopped(e, faulty_steps);
                    faulty_steps = 0;
                    continue;
                }
            }
            // Once a second the sequencer seals idle logs' old files.
            match self.node_mut().tend_idle(now_us) {
                Ok(sealed) => self.outcome.idle_seals += u64::from(sealed),
                Err(Stopped(e)) => {
                    self.stopped(e, faulty_steps);
                    faulty_steps = 0;
                    continue;
                }
            }
            if self.rng.gen_range(0..1000) < self.plan.checkpoint_ppt {
                trace(|| format!("checkpoint at {}", self.node().store.applied));
                self.node_mut().checkpoint();
            }
            if self.rng.gen_range(0..1000) < self.plan.crash_ppt {
                let crash = *[Crash::Kill, Crash::PowerCut, Crash::TornPowerCut].choose(&mut self.rng).unwrap();
                self.crash_and_recover(crash);
                faulty_steps = 0;
            }
        }
        self.crash_and_recover(Crash::PowerCut);
        self.outcome.acked_pushes = self.model.acked.len() as u64;
        self.outcome.faults = self.storage.counts();
        self.outcome
    }

    fn node(&self) -> &SimNode {
        self.node.as_ref().expect("a node runs")
    }

    fn node_mut(&mut self) -> &mut SimNode {
        self.node.as_mut().expect("a node runs")
    }

    /// A failed write or fdatasync stops the node, as it stops a real one:
    /// a kill, or the machine going down with it.
    fn stopped(&mut self, e: std::io::Error, faulty_steps: usize) {
        if faulty_steps == 0 || !matches!(e.raw_os_error(), Some(libc::EIO | libc::ENOSPC)) {
            self.violation(&format!("a group commit failed with no fault injected: {e}"));
        }
        self.outcome.stops += 1;
        let crash = *[Crash::Kill, Crash::PowerCut, Crash::TornPowerCut].choose(&mut self.rng).unwrap();
        self.crash_and_recover(crash);
    }

    fn violation(&self, what: &str) -> ! {
        panic!("seed {}: invariant violated: {what}", self.seed)
    }

    fn commands(&mut self) -> Vec<Command> {
        let n = self.rng.gen_range(1..=6);
        (0..n).map(|_| self.command()).collect()
    }

    fn command(&mut self) -> Command {
        let roll = self.rng.gen_range(0..100);
        if roll < 45 {
            let items = (0..self.rng.gen_range(1..=3)).map(|_| self.push_item()).collect();
            Command::Push(items)
        } else if roll < 55 {
            self.kv_command()
        } else if roll < 63 {
            self.timer_command()
        } else if roll < 68 {
            Command::FireTimers
        } else if roll < 85 {
            Command::Pop(PopRequest {
                queue: Some(QUEUES.choose(&mut self.rng).unwrap().to_string()),
                partition: None,
                namespace: None,
                task: None,
                group: GROUP.into(),
                batch: self.rng.gen_range(1..=4),
                partitions: 1,
                auto_ack: false,
                subscription: Subscription::All,
                conflation: false,
                lease_us: Some(LEASE_US),
            })
        } else {
            let held: Vec<_> = self.model.leases.iter().map(|(k, v)| (*k, v.clone())).collect();
            let Some(((q, p), (lease, _, offsets))) = held.choose(&mut self.rng).cloned() else {
                return Command::Push(vec![self.push_item()]);
            };
            let items = offsets
                .iter()
                .filter_map(|o| self.model.by_offset.get(&(q, p, *o)))
                .map(|txn| AckItem {
                    queue_id: q,
                    partition_id: p,
                    transaction_id: txn.clone(),
                    group: GROUP.into(),
                    lease_id: Some(lease.clone()),
                    status: if self.rng.gen_bool(0.8) { AckStatus::Completed } else { AckStatus::Failed },
                    error: None,
                })
                .collect();
            Command::Ack(items)
        }
    }

    fn kv_command(&mut self) -> Command {
        let key = KV_KEYS.choose(&mut self.rng).unwrap().to_string();
        let kind = if self.rng.gen_bool(0.5) {
            self.next_txn += 1;
            KvKind::Put { key, value: format!("\"v{}\"", self.next_txn), expiry: Expiry::Forever, expect: None }
        } else {
            KvKind::Get { key }
        };
        Command::Kv(vec![KvOp { ns: KV_NS.into(), kind, required: true }])
    }

    fn timer_command(&mut self) -> Command {
        let scheduled: Vec<String> = self.model.timers.keys().cloned().collect();
        let op = |verb, key: String, delay_ms, txn| TimerOp {
            verb,
            queue: TIMER_QUEUE.into(),
            key,
            partition: "p".into(),
            delay_ms,
            txn,
            payload: b"\"tick\"".to_vec(),
            sealed: false,
        };
        match scheduled.choose(&mut self.rng) {
            Some(key) if self.rng.gen_bool(0.3) => Command::Timers(vec![op(TimerVerb::Cancel, key.clone(), 0, None)]),
            _ => {
                self.next_txn += 1;
                let (key, txn) = (format!("tk{}", self.next_txn), format!("timer-{}-{}", self.seed, self.next_txn));
                Command::Timers(vec![op(TimerVerb::Schedule, key, self.rng.gen_range(0..3000), Some(txn))])
            }
        }
    }

    fn push_item(&mut self) -> PushItem {
        let queue = QUEUES.choose(&mut self.rng).unwrap().to_string();
        let partition = PARTITIONS.choose(&mut self.rng).unwrap().to_string();
        let retry = self.rng.gen_bool(0.15).then(|| self.model.acked.keys().cloned().collect::<Vec<_>>());
        let (queue, partition, txn) = match retry.and_then(|keys| keys.choose(&mut self.rng).cloned()) {
            // A retry of an answered push: same place, same id, same value.
            Some(key) => key,
            None => {
                self.next_txn += 1;
                (queue, partition, format!("t{}-{}", self.seed, self.next_txn))
            }
        };
        let value = format!("{queue}/{partition}/{txn}").into_bytes();
        // Past 512 bytes payloads are compressed: some values are.
        let pad = if self.rng.gen_bool(0.2) { 600 } else { 0 };
        let mut value = value;
        value.resize(value.len() + pad, b'.');
        PushItem::new(queue, partition, &Message::new(txn, value), 1)
    }

    /// Checks one answer against the model, and records what it promises.
    fn answered(&mut self, command: &Command, answer: Answer) {
        trace(|| format!("at {}: {command:?}\n  => {answer:?}", self.now_us));
        match (command, answer) {
            (Command::Push(items), Answer::Pushed(outcomes)) => {
                assert_eq!(items.len(), outcomes.len(), "one outcome per pushed item");
                for (item, out) in items.iter().zip(outcomes) {
                    let PushBody::Message { transaction_id, payload } = &item.body else {
                        panic!("the simulation pushes messages one by one, never a Kafka batch")
                    };
                    let key = (item.queue.clone(), item.partition.clone(), transaction_id.clone());
                    let value = payload.raw().map(|raw| Message::decode(&raw).unwrap().value_bytes().to_vec());
                    match (self.model.acked.get(&key), out.status) {
                        (Some((offset, _)), PushStatus::Duplicate) if *offset == out.offset => {}
                        (Some((offset, _)), status) => self.violation(&format!(
                            "a retry of {key:?}, answered at offset {offset}, was answered {status:?} at offset {}",
                            out.offset
                        )),
                        (None, _) => {
                            // A first answer, or the duplicate of a push whose
                            // batch stopped the node but reached the logs.
                            self.model.acked.insert(key, (out.offset, value.unwrap()));
                            self.model
                                .by_offset
                                .insert((out.queue_id, out.partition_id, out.offset), transaction_id.clone());
                        }
                    }
                }
            }
            (Command::Pop(_), Answer::Popped(claims)) => {
                for c in claims {
                    if c.lease_id.is_empty() {
                        continue;
                    }
                    let key = (c.queue_id, c.partition_id);
                    if let Some((lease, expires, _)) = self.model.leases.get(&key) {
                        if *expires > self.now_us {
                            self.violation(&format!(
                                "partition {key:?} was leased to {} while lease {lease} held it until {expires} (now {})",
                                c.lease_id, self.now_us
                            ));
                        }
                    }
                    let offsets = c.messages.iter().map(|(o, _)| *o).collect();
                    self.model.leases.insert(key, (c.lease_id, c.lease_expires_us, offsets));
                }
            }
            (Command::Kv(ops), Answer::Kv(KvAnswer::Results(results))) => {
                for (op, result) in ops.iter().zip(results) {
                    match (&op.kind, result) {
                        (KvKind::Put { key, value, .. }, KvResult::Write { applied: Ok(()), .. }) => {
                            self.model.kv.insert(key.clone(), Some(value.clone()));
                        }
                        (KvKind::Get { key }, KvResult::Get { row, .. }) => {
                            let read = row.map(|r| r.value);
                            match self.model.kv.get(key) {
                                Some(Some(written)) if read.as_ref() != Some(written) => self.violation(&format!(
                                    "KV {key} read {read:?} after a write of {written} was answered"
                                )),
                                None if read.is_some() => {
                                    self.violation(&format!("KV {key} read {read:?}, never written"))
                                }
                                _ => {}
                            }
                        }
                        (kind, result) => self.violation(&format!("KV {kind:?} answered {result:?}")),
                    }
                }
            }
            (Command::Timers(ops), Answer::Timers(results)) => {
                for (op, result) in ops.iter().zip(results) {
                    match result {
                        TimerResult::Scheduled { txn, deliver_at_us, .. } => {
                            if deliver_at_us < self.now_us + op.delay_ms * 1000 {
                                self.violation(&format!("timer {txn} was scheduled to fire before its delay"));
                            }
                            self.model.timers.insert(op.key.clone(), txn.clone());
                            self.model.timers_due.insert(txn, deliver_at_us);
                        }
                        TimerResult::Cancelled { txn } => {
                            self.model.timers.remove(&op.key);
                            self.model.timers_cancelled.insert(txn);
                        }
                        TimerResult::Absent => {
                            // Fired already (or by an entry never answered).
                            self.model.timers.remove(&op.key);
                        }
                    }
                }
            }
            (Command::FireTimers, Answer::Fired { .. }) => {}
            (Command::Ack(items), Answer::Acked(outcomes)) => {
                for (item, out) in items.iter().zip(outcomes) {
                    if out.lease_released {
                        let key = (item.queue_id, item.partition_id);
                        if self.model.leases.get(&key).is_some_and(|(l, _, _)| Some(l) == item.lease_id.as_ref()) {
                            self.model.leases.remove(&key);
                        }
                    }
                }
            }
            (c, a) => self.violation(&format!("{c:?} was answered {a:?}")),
        }
    }

    fn crash_and_recover(&mut self, crash: Crash) {
        trace(|| format!("at {}: {crash:?}", self.now_us));
        self.storage.crash(crash);
        self.outcome.recoveries += 1;
        if let Some(node) = self.node.take() {
            node.die();
        }
        // Some boots read through a path that flips bits now and then (a
        // bus, a controller, memory): what a read returns is damaged, the
        // medium is not.
        let flips = self.rng.gen_bool(0.3);
        if flips {
            self.storage.arm(Faults { read_flips_ppm: 2_000, ..Faults::default() });
        }
        let booted = SimNode::boot(&self.storage, self.checkpoint_dir.path(), self.plan.segment_bytes);
        self.storage.arm(Faults::default());
        self.node = match booted {
            Ok(node) => Some(node),
            Err(e) => self.violation(&format!("the node refused to boot after a {crash:?}: {e}")),
        };
        let (applied, last) = (self.node().store.applied.index, self.node().last_index());
        trace(|| format!("recovered: replayed through {applied}, the log ends at {last}"));
        self.outcome.short_replays += u64::from(last > applied);
        // Entries past what the logs kept were never answered; the planner
        // numbers the next ones from there again.
        self.history.retain(|index, _| *index <= last);
        self.lead_new_term();
        self.reconcile_leases(last);
        self.check_terms();
        self.check_acked_pushes();
        self.check_partitions();
        self.check_kv();
        self.check_timers();
        self.check_against_reference();
    }

    /// Every lease answered and not released holds its partition still,
    /// unless an entry that was never answered but survived the crash
    /// released it (an ack, or a failure, in a batch that stopped the node).
    fn reconcile_leases(&mut self, last: u64) {
        let survived = self.unanswered.iter().any(|i| *i <= last);
        self.unanswered.clear();
        let store = &self.node().store;
        let mut lost = Vec::new();
        for ((q, p), (lease, expires, _)) in &self.model.leases {
            let held = store.cursors.iter().any(|((cq, cp, g), c)| {
                (*cq, *cp) == (*q, *p) && g == GROUP && c.lease.as_ref().is_some_and(|l| l.id == *lease)
            });
            if !held {
                if !survived && *expires > self.now_us {
                    self.violation(&format!("lease {lease} on partition {q}/{p}, answered, was lost by a crash"));
                }
                lost.push((*q, *p));
            }
        }
        for key in lost {
            self.model.leases.remove(&key);
        }
    }

    /// Every KV write answered holds, unless a later one never answered may have replaced it.
    fn check_kv(&self) {
        for (key, written) in &self.model.kv {
            let Some(written) = written else { continue };
            let row = self.node().store.kv.get(&row_key(KV_NS, key)).map(|r| r.value.clone());
            if row.as_ref() != Some(written) {
                self.violation(&format!("KV {key} holds {row:?} after a crash; the last write answered was {written}"));
            }
        }
    }

    /// A timer fires at most once (its transactionId is stored once: see
    /// `check_partitions`), never after a cancel that reported removing it,
    /// and never before its delay.
    fn check_timers(&self) {
        let store = &self.node().store;
        let Some(q) = store.queue_id(TIMER_QUEUE) else { return };
        let Some(p) = store.partition_id(q, "p") else { return };
        for offset in 0..store.partition(q, p).map_or(0, |r| r.next_offset) {
            let (txn, _) = self.node().read(q, p, offset).unwrap_or_else(|why| self.violation(&why));
            let span = store.locator.spans_from(q, p, offset)[0];
            if self.model.timers_cancelled.contains(&txn) {
                self.violation(&format!("timer {txn} fired after a cancel reported removing it"));
            }
            if let Some(due) = self.model.timers_due.get(&txn) {
                if span.timestamp_us < *due {
                    self.violation(&format!("timer {txn} fired at {} before its time {due}", span.timestamp_us));
                }
            }
        }
    }

    /// Every answered push is at its offset, with its value.
    fn check_acked_pushes(&self) {
        let store = &self.node().store;
        for ((queue, partition, txn), (offset, value)) in &self.model.acked {
            let q = store.queue_id(queue).unwrap_or_else(|| self.violation(&format!("queue {queue} is gone")));
            let p = store
                .partition_id(q, partition)
                .unwrap_or_else(|| self.violation(&format!("partition {queue}/{partition} is gone")));
            match self.node().read(q, p, *offset) {
                Ok((t, v)) if t == *txn && v == *value => {}
                found => self.violation(&format!(
                    "the push {txn} answered at {queue}/{partition}@{offset} reads back as {found:?}"
                )),
            }
        }
    }

    /// Offsets without gaps from 0 to the high watermark, no transactionId twice.
    fn check_partitions(&self) {
        let store = &self.node().store;
        for ((q, p), row) in store.partitions.iter() {
            let mut seen = HashMap::new();
            for offset in 0..row.next_offset {
                let (txn, _) = self.node().read(*q, *p, offset).unwrap_or_else(|why| {
                    self.violation(&format!("partition {q}/{p} has a gap at offset {offset}: {why}"))
                });
                if let Some(first) = seen.insert(txn.clone(), offset) {
                    self.violation(&format!(
                        "transactionId {txn} is stored twice in {q}/{p}: offsets {first} and {offset}"
                    ));
                }
            }
        }
    }

    /// Terms never go back along the log: a boot leads in a term after every
    /// term the log holds, because the vote it saved says which.
    fn check_terms(&self) {
        let ids: Vec<LogId> = self.history.values().map(|e| e.id).collect();
        if let Some(w) = ids.windows(2).find(|w| w[1].term < w[0].term) {
            self.violation(&format!("entry {} follows entry {} in an earlier term", w[1], w[0]));
        }
    }

    /// The recovered store equals a store that applied the same entries with no crash.
    fn check_against_reference(&self) {
        let mut reference = Store::default();
        for e in self.history.values() {
            apply(&mut reference, e, &nowhere(e));
        }
        let (got, want) = (digest(&self.node().store), digest(&reference));
        if got != want {
            let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
            self.violation(&format!(
                "the recovered store differs from the reference at applied {}: {:?} vs {:?}",
                self.node().store.applied,
                got.get(at),
                want.get(at)
            ));
        }
    }
}

/// With `QUEEN_SIM_TRACE` set, every answer, checkpoint and crash goes to
/// stderr: what to read when a seed fails.
fn trace(line: impl FnOnce() -> String) {
    if std::env::var_os("QUEEN_SIM_TRACE").is_some() {
        eprintln!("{}", line());
    }
}
