//! Planning KV calls. Every operation of one call is judged against the same
//! state, in order, each seeing the writes before it: the call is one entry,
//! so it is strict serializable across its keys and linearizable per key. A
//! `required` operation that loses aborts the whole call.

use super::effect::Effect;
use super::overlay::Overlay;
use crate::store::rows::KvRow;
use crate::store::Store;
use std::collections::BTreeMap;

/// The most rows one getPrefix answers.
pub const MAX_PREFIX_LIMIT: usize = 1000;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct KvOp {
    pub ns: String,
    pub kind: KvKind,
    /// When it loses, nothing of the call is written.
    pub required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Expiry {
    Seconds(u64),
    Forever,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum KvKind {
    Get {
        key: String,
    },
    GetMany {
        keys: Vec<String>,
    },
    GetPrefix {
        prefix: String,
        after: Option<String>,
        limit: usize,
        keys_only: bool,
    },
    /// `expect`: none for an upsert, 0 for "must not exist", N for "must be at version N".
    Put {
        key: String,
        value: String,
        expiry: Expiry,
        expect: Option<u64>,
    },
    PutIfAbsent {
        key: String,
        value: String,
        expiry: Expiry,
    },
    Delete {
        key: String,
        expect: Option<u64>,
    },
    /// The expiry applies only when the row is created.
    Incr {
        key: String,
        delta: serde_json::Number,
        min: Option<f64>,
        max: Option<f64>,
        expiry: Expiry,
    },
    Check {
        key: String,
        expect: u64,
    },
}

/// Why a write did not apply; the closed set the client knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum KvReason {
    Version,
    Absent,
    Exists,
    Limit,
    Type,
}

impl KvReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Version => "version",
            Self::Absent => "absent",
            Self::Exists => "exists",
            Self::Limit => "limit",
            Self::Type => "type",
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum KvResult {
    Get {
        key: String,
        row: Option<KvRow>,
    },
    Many {
        rows: Vec<(String, KvRow)>,
        missing: Vec<String>,
    },
    Prefix {
        rows: Vec<(String, KvRow)>,
        truncated: bool,
        next_after: Option<String>,
        keys_only: bool,
    },
    /// A write or a check: `row` is the row as it stands after the operation
    /// (for an applied delete, the row it removed).
    Write {
        key: String,
        applied: Result<(), KvReason>,
        row: Option<KvRow>,
    },
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum KvAnswer {
    Results(Vec<KvResult>),
    /// A required operation lost: nothing was written.
    Precondition {
        failed_index: usize,
        reason: KvReason,
        row: Option<KvRow>,
    },
}

/// The store key of a namespace's key.
pub fn row_key(ns: &str, key: &str) -> String {
    format!("{ns}\0{key}")
}

/// The rows a call sees: the store, what the batch in flight wrote, and what
/// this call wrote so far.
struct View<'a> {
    store: &'a Store,
    overlay: &'a Overlay,
    local: BTreeMap<String, Option<KvRow>>,
    now_us: i64,
}

impl View<'_> {
    fn live(&self, k: &str) -> Option<KvRow> {
        let row = match self.local.get(k) {
            Some(r) => r.clone(),
            None => self.overlay.kv_row(self.store, k),
        };
        row.filter(|r| r.live(self.now_us))
    }

    /// Live rows whose keys start with `from_prefix`, after `after`, in key order.
    fn prefix(&self, from_prefix: &str, after: Option<&str>) -> BTreeMap<String, KvRow> {
        let mut keys: Vec<String> = self
            .store
            .kv
            .range(from_prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(from_prefix))
            .map(|(k, _)| k.clone())
            .collect();
        keys.extend(self.overlay.kv_keys_with_prefix(from_prefix));
        keys.extend(self.local.keys().filter(|k| k.starts_with(from_prefix)).cloned());
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter(|k| after.is_none_or(|a| k.as_str() > a))
            .filter_map(|k| self.live(&k).map(|r| (k, r)))
            .collect()
    }
}

fn expires(expiry: Expiry, now_us: i64) -> Option<i64> {
    match expiry {
        Expiry::Seconds(s) => Some(now_us.saturating_add((s as i64).saturating_mul(1_000_000))),
        Expiry::Forever => None,
    }
}

fn strip_ns(ns: &str, k: &str) -> String {
    k[ns.len() + 1..].to_string()
}

pub fn plan_kv(store: &Store, overlay: &mut Overlay, now_us: i64, ops: &[KvOp]) -> (Vec<Effect>, KvAnswer) {
    let mut view = View { store, overlay, local: BTreeMap::new(), now_us };
    let mut next_version = overlay.next_kv_version(store);
    let mut results = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let ns = &op.ns;
        let result = match &op.kind {
            KvKind::Get { key } => KvResult::Get { key: key.clone(), row: view.live(&row_key(ns, key)) },
            KvKind::GetMany { keys } => {
                let mut sorted = keys.clone();
                sorted.sort_unstable();
                sorted.dedup();
                let (mut rows, mut missing) = (Vec::new(), Vec::new());
                for key in sorted {
                    match view.live(&row_key(ns, &key)) {
                        Some(r) => rows.push((key, r)),
                        None => missing.push(key),
                    }
                }
                KvResult::Many { rows, missing }
            }
            KvKind::GetPrefix { prefix, after, limit, keys_only } => {
                let after = after.as_ref().map(|a| row_key(ns, a));
                let all = view.prefix(&row_key(ns, prefix), after.as_deref());
                let limit = (*limit).clamp(1, MAX_PREFIX_LIMIT);
                let truncated = all.len() > limit;
                let rows: Vec<(String, KvRow)> =
                    all.into_iter().take(limit).map(|(k, r)| (strip_ns(ns, &k), r)).collect();
                let next_after = truncated.then(|| rows.last().map(|(k, _)| k.clone())).flatten();
                KvResult::Prefix { rows, truncated, next_after, keys_only: *keys_only }
            }
            kind => {
                let (key, outcome) = write(&view, kind, ns, now_us, &mut next_version);
                let k = row_key(ns, &key);
                let current = view.live(&k);
                let (applied, row) = match outcome {
                    Ok(Change::Set(row)) => {
                        view.local.insert(k, Some(row.clone()));
                        (Ok(()), Some(row))
                    }
                    Ok(Change::Remove) => {
                        view.local.insert(k, None);
                        (Ok(()), current)
                    }
                    Ok(Change::Nothing) => (Ok(()), current),
                    Err(reason) => {
                        if op.required {
                            return (vec![], KvAnswer::Precondition { failed_index: index, reason, row: current });
                        }
                        (Err(reason), current)
                    }
                };
                KvResult::Write { key, applied, row }
            }
        };
        results.push(result);
    }
    let mut effects = Vec::new();
    for (key, row) in std::mem::take(&mut view.local) {
        match &row {
            Some(row) => effects.push(Effect::KvPut { key: key.clone(), row: row.clone() }),
            None => effects.push(Effect::KvDelete { key: key.clone() }),
        }
        overlay.put_kv(key, row);
    }
    // Versions count rows written: a round of reads writes none, and leaves
    // no decision behind (the overlay's consistency check holds it to that).
    if !effects.is_empty() {
        overlay.set_next_kv_version(next_version);
    }
    (effects, KvAnswer::Results(results))
}

enum Change {
    Set(KvRow),
    Remove,
    Nothing,
}

/// Judges one write against the view; answers its key and what it changes.
fn write(
    view: &View<'_>,
    kind: &KvKind,
    ns: &str,
    now_us: i64,
    next_version: &mut u64,
) -> (String, Result<Change, KvReason>) {
    let mut new_row = |value: String, expires_us: Option<i64>| {
        let version = *next_version;
        *next_version += 1;
        KvRow { value, version, expires_us, updated_us: now_us }
    };
    let expect_holds = |current: &Option<KvRow>, expect: Option<u64>| match (expect, current) {
        (None, _) => Ok(()),
        (Some(0), None) => Ok(()),
        (Some(0), Some(_)) => Err(KvReason::Exists),
        (Some(_), None) => Err(KvReason::Absent),
        (Some(n), Some(r)) if r.version == n => Ok(()),
        (Some(_), Some(_)) => Err(KvReason::Version),
    };
    match kind {
        KvKind::Put { key, value, expiry, expect } => {
            let current = view.live(&row_key(ns, key));
            let outcome =
                expect_holds(&current, *expect).map(|()| Change::Set(new_row(value.clone(), expires(*expiry, now_us))));
            (key.clone(), outcome)
        }
        KvKind::PutIfAbsent { key, value, expiry } => {
            let current = view.live(&row_key(ns, key));
            let outcome = match current {
                Some(_) => Err(KvReason::Exists),
                None => Ok(Change::Set(new_row(value.clone(), expires(*expiry, now_us)))),
            };
            (key.clone(), outcome)
        }
        KvKind::Delete { key, expect } => {
            let current = view.live(&row_key(ns, key));
            let outcome = match (expect_holds(&current, *expect), &current) {
                (Err(r), _) => Err(r),
                (Ok(()), Some(_)) => Ok(Change::Remove),
                (Ok(()), None) if *expect == Some(0) => Ok(Change::Nothing),
                (Ok(()), None) => Err(KvReason::Absent),
            };
            (key.clone(), outcome)
        }
        KvKind::Check { key, expect } => {
            let current = view.live(&row_key(ns, key));
            (key.clone(), expect_holds(&current, Some(*expect)).map(|()| Change::Nothing))
        }
        KvKind::Incr { key, delta, min, max, expiry } => {
            let current = view.live(&row_key(ns, key));
            let base = match &current {
                None => Ok(serde_json::Number::from(0)),
                Some(r) => match serde_json::from_str::<serde_json::Value>(&r.value) {
                    Ok(serde_json::Value::Number(n)) => Ok(n),
                    _ => Err(KvReason::Type),
                },
            };
            let outcome = base.and_then(|b| {
                let sum = add(&b, delta).ok_or(KvReason::Limit)?;
                let f = sum.as_f64().unwrap_or(f64::NAN);
                if min.is_some_and(|m| f < m) || max.is_some_and(|m| f > m) {
                    return Err(KvReason::Limit);
                }
                let expires_us = match &current {
                    Some(r) => r.expires_us,
                    None => expires(*expiry, now_us),
                };
                Ok(Change::Set(new_row(sum.to_string(), expires_us)))
            });
            (key.clone(), outcome)
        }
        KvKind::Get { .. } | KvKind::GetMany { .. } | KvKind::GetPrefix { .. } => unreachable!("reads are not writes"),
    }
}

/// Exact integer addition when both are integers, else floating point.
fn add(a: &serde_json::Number, b: &serde_json::Number) -> Option<serde_json::Number> {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x.checked_add(y).map(serde_json::Number::from),
        _ => serde_json::Number::from_f64(a.as_f64()? + b.as_f64()?),
    }
}

/// The most expired rows one sweep entry deletes.
const MAX_SWEEP: usize = 1000;

/// Deletes expired rows, skipping any this batch has written again.
pub fn plan_sweep(store: &Store, overlay: &mut Overlay, now_us: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    for key in store.kv_expired(now_us, MAX_SWEEP) {
        if overlay.kv_row(store, &key).is_some_and(|row| row.live(now_us)) {
            continue;
        }
        overlay.put_kv(key.clone(), None);
        effects.push(Effect::KvDelete { key });
    }
    effects
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::command::{Answer, Command};
    use crate::planner::locks::LockOp;
    use crate::planner::testing::{fresh, run_at};

    /// Once every entry is applied the planner checks (in debug builds) that
    /// its overlay holds nothing: a read that left a decision behind panics.
    #[test]
    fn a_round_of_reads_leaves_no_decision_behind() {
        let (mut store, mut planner) = fresh();
        let get = KvOp { ns: "n".into(), kind: KvKind::Get { key: "k".into() }, required: true };
        let answer = run_at(&mut planner, &mut store, 1_000, Command::Kv(vec![get]));
        assert!(matches!(answer, Answer::Kv(KvAnswer::Results(_))), "{answer:?}");
        let query = LockOp::Get { name: "l".into() };
        run_at(&mut planner, &mut store, 2_000, Command::Locks(vec![query]));
        // A read changed nothing, and the next plan starts from the store.
        planner.caught_up_with(&store);
        assert_eq!(store.applied.index, 0, "reads write no entry");
    }
}
