//! The KV half of the clients' history: every KV call as it was sent and
//! as it was answered, per key, on one line of real time (a counter of the
//! simulation's events, which run on one thread), checked for
//! linearizability key by key (`linearizable.rs`). A call whose answer was
//! lost (a timeout, a stopped node) counts as possibly applied; one refused
//! with `NotLeader` was never planned and is left out.
//!
//! The calls are those whose answers the leader may give without writing
//! an entry, beside plain writes: `get`, `getMany`, `check`, and
//! conditional writes (`put` with `expect`, `putIfAbsent`) that may be
//! refused. A client learns which value each version holds from the rows
//! it is answered (every value is written once and a version is never
//! reissued), and an `expect` on a version is checked as an expectation on
//! that value.

use super::linearizable::{self, Event, Op};
use queen::seams::planner::{Answer, Command};
use queen::seams::planner::{Expiry, KvAnswer, KvKind, KvOp, KvResult};
use queen::seams::replicate::ProposeError;
use queen::seams::store::KvRow;
use std::collections::BTreeMap;

pub const KV_NS: &str = "sim";

/// One KV call of the workload.
#[derive(Debug, Clone)]
pub enum KvCall {
    Get(String),
    GetMany(Vec<String>),
    Put {
        key: String,
        value: String,
    },
    /// A put that applies only at `version` (0: only while absent).
    PutAt {
        key: String,
        value: String,
        version: u64,
    },
    PutIfAbsent {
        key: String,
        value: String,
    },
    /// Applies nothing; refused unless the key is at `version`.
    Check {
        key: String,
        version: u64,
    },
}

impl KvCall {
    pub fn command(&self) -> Command {
        let kind = match self.clone() {
            KvCall::Get(key) => KvKind::Get { key },
            KvCall::GetMany(keys) => KvKind::GetMany { keys },
            KvCall::Put { key, value } => KvKind::Put { key, value, expiry: Expiry::Forever, expect: None },
            KvCall::PutAt { key, value, version } => {
                KvKind::Put { key, value, expiry: Expiry::Forever, expect: Some(version) }
            }
            KvCall::PutIfAbsent { key, value } => KvKind::PutIfAbsent { key, value, expiry: Expiry::Forever },
            KvCall::Check { key, version } => KvKind::Check { key, expect: version },
        };
        Command::Kv(vec![KvOp { ns: KV_NS.into(), kind, required: true }])
    }
}

/// A call on its way: when it was sent.
pub struct Sent {
    call: KvCall,
    invoked: u64,
}

#[derive(Default)]
pub struct KvHistory {
    /// The last point of real time given out.
    clock: u64,
    /// Per key, its operations.
    ops: BTreeMap<String, Vec<Event>>,
    /// Per key, the value each version it was seen at holds.
    versions: BTreeMap<String, BTreeMap<u64, String>>,
    pub violations: Vec<String>,
}

impl KvHistory {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    pub fn send(&mut self, call: KvCall) -> Sent {
        Sent { call, invoked: self.tick() }
    }

    /// The versions `key` was seen at, for an `expect` to name.
    pub fn known_versions(&self, key: &str) -> Vec<u64> {
        self.versions.get(key).map(|v| v.keys().copied().collect()).unwrap_or_default()
    }

    fn learn(&mut self, key: &str, row: Option<&KvRow>) {
        if let Some(row) = row {
            let known = self.versions.entry(key.to_string()).or_default();
            if let Some(before) = known.insert(row.version, row.value.clone()).filter(|v| *v != row.value) {
                self.violations.push(format!(
                    "KV {key} at version {} was answered as {} and as {before}: a version was reissued",
                    row.version, row.value
                ));
            }
        }
    }

    /// The value `key` holds at `version`, as an expectation (absent for 0).
    fn expected(&self, key: &str, version: u64) -> Option<String> {
        if version == 0 {
            return None;
        }
        let value = self.versions.get(key).and_then(|v| v.get(&version)).cloned();
        Some(value.expect("an expect names only a version a client was answered"))
    }

    fn record(&mut self, key: &str, op: Op, invoked: u64, returned: Option<u64>) {
        self.ops.entry(key.to_string()).or_default().push(Event { op, invoked, returned });
    }

    /// Records what `sent` was answered.
    pub fn answered(&mut self, sent: Sent, answer: &Result<Answer, ProposeError>) {
        let Sent { call, invoked } = sent;
        let returned = self.tick();
        let result = match answer {
            // Refused before it was planned: it never happened.
            Err(ProposeError::NotLeader { .. }) => return,
            // Possibly applied: writes stay in the history without an end.
            Err(_) => None,
            Ok(Answer::Kv(KvAnswer::Results(results))) => match results.as_slice() {
                [one] => Some(Ok(one.clone())),
                other => {
                    self.violations.push(format!("{call:?} was answered {other:?}"));
                    return;
                }
            },
            Ok(Answer::Kv(KvAnswer::Precondition { row, .. })) => Some(Err(row.clone())),
            Ok(other) => {
                self.violations.push(format!("{call:?} was answered {other:?}"));
                return;
            }
        };
        let end = result.is_some().then_some(returned);
        match (call, result) {
            (KvCall::Get(_) | KvCall::GetMany(_), None) => {}
            (KvCall::Get(key), Some(Ok(KvResult::Get { row, .. }))) => {
                self.learn(&key, row.as_ref());
                self.record(&key, Op::Read(row.map(|r| r.value)), invoked, end);
            }
            (KvCall::GetMany(_), Some(Ok(KvResult::Many { rows, missing }))) => {
                for (key, row) in rows {
                    self.learn(&key, Some(&row));
                    self.record(&key, Op::Read(Some(row.value)), invoked, end);
                }
                for key in missing {
                    self.record(&key, Op::Read(None), invoked, end);
                }
            }
            (KvCall::Put { key, value }, result) => {
                if let Some(Ok(KvResult::Write { row, .. })) = &result {
                    self.learn(&key, row.as_ref());
                }
                self.record(&key, Op::Write(value), invoked, end);
            }
            (KvCall::PutAt { ref key, ref value, version }, result) => {
                let expect = self.expected(key, version);
                self.conditional(key, expect, Some(value.clone()), result, invoked, end);
            }
            (KvCall::PutIfAbsent { ref key, ref value }, result) => {
                self.conditional(key, None, Some(value.clone()), result, invoked, end);
            }
            (KvCall::Check { ref key, version }, result) => {
                let expect = self.expected(key, version);
                self.conditional(key, expect, None, result, invoked, end);
            }
            (call, Some(result)) => self.violations.push(format!("{call:?} was answered {result:?}")),
        }
    }

    fn conditional(
        &mut self,
        key: &str,
        expect: Option<String>,
        value: Option<String>,
        result: Option<Result<KvResult, Option<KvRow>>>,
        invoked: u64,
        end: Option<u64>,
    ) {
        let applied = match result {
            None => None,
            Some(Ok(KvResult::Write { row, applied: Ok(()), .. })) => {
                self.learn(key, row.as_ref());
                Some(true)
            }
            Some(Err(row)) => {
                self.learn(key, row.as_ref());
                Some(false)
            }
            Some(Ok(other)) => {
                self.violations.push(format!("a conditional call on {key} was answered {other:?}"));
                return;
            }
        };
        self.record(key, Op::Cond { expect, value, applied }, invoked, end);
    }

    /// Checks every key's history, ending with what each settled node's
    /// store holds (`holds`: key → per node, its value), read after every
    /// call was answered; answers what is not linearizable.
    pub fn check(&self, holds: &BTreeMap<String, Vec<Option<String>>>) -> Vec<String> {
        let mut broke = self.violations.clone();
        let after = self.clock + 1;
        let keys: std::collections::BTreeSet<&String> = self.ops.keys().chain(holds.keys()).collect();
        for key in keys {
            let mut events = self.ops.get(key).cloned().unwrap_or_default();
            for held in holds.get(key).into_iter().flatten() {
                events.push(Event { op: Op::Read(held.clone()), invoked: after, returned: Some(after + 1) });
            }
            if let Err(e) = linearizable::check(key, None, &events) {
                broke.push(e);
            }
        }
        broke
    }

    /// The keys with operations.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.ops.keys()
    }

    /// How many KV operations were recorded, and how many of them had no answer.
    pub fn counts(&self) -> (usize, usize) {
        let all = self.ops.values().map(Vec::len).sum();
        let open = self.ops.values().flatten().filter(|e| e.returned.is_none()).count();
        (all, open)
    }
}
