//! Planning locks and semaphores. A permit is a KV row in namespace
//! `queen-locks`, key `name#slot`, holding `{"owner", "since"}`; its token is
//! the row's version, so a later holder always has a higher token, and a
//! transaction fences on it with a KV check (the guard). Each operation of a
//! call is judged on its own; a refusal is a verdict, not an error.

use super::effect::Effect;
use super::kv::row_key;
use super::overlay::Overlay;
use crate::store::rows::KvRow;
use crate::store::Store;
use serde_json::{json, Value};

pub const LOCKS_NS: &str = "queen-locks";

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum LockOp {
    Acquire { name: String, ttl_s: u64, owner: Option<String>, limit: u32 },
    Renew { name: String, token: u64, ttl_s: u64, slot: u32, owner: Option<String> },
    Release { name: String, token: u64, slot: u32 },
    Get { name: String },
}

/// One permit as a verdict shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Holder {
    pub slot: u32,
    pub owner: Option<String>,
    pub row: KvRow,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum LockResult {
    Granted {
        slot: u32,
        token: u64,
        owner: Option<String>,
        already: bool,
    },
    Held {
        holders: Vec<Holder>,
    },
    Renewed {
        slot: u32,
        token: u64,
    },
    Released {
        slot: u32,
    },
    /// The token is no longer the permit's (expired, released, or taken).
    Lost {
        slot: u32,
        holders: Vec<Holder>,
    },
    Status {
        holders: Vec<Holder>,
    },
}

fn permit_key(name: &str, slot: u32) -> String {
    row_key(LOCKS_NS, &format!("{name}#{slot}"))
}

fn owner_of(row: &KvRow) -> Option<String> {
    serde_json::from_str::<Value>(&row.value).ok()?.get("owner")?.as_str().map(str::to_string)
}

struct Permits<'a> {
    store: &'a Store,
    overlay: &'a mut Overlay,
    now_us: i64,
    next_version: u64,
    effects: Vec<Effect>,
}

impl Permits<'_> {
    fn live(&self, name: &str, slot: u32) -> Option<KvRow> {
        self.overlay.kv_row(self.store, &permit_key(name, slot)).filter(|r| r.live(self.now_us))
    }

    fn holders(&self, name: &str, slots: u32) -> Vec<Holder> {
        (0..slots)
            .filter_map(|slot| self.live(name, slot).map(|row| Holder { slot, owner: owner_of(&row), row }))
            .collect()
    }

    fn write(&mut self, name: &str, slot: u32, value: Value, ttl_s: u64) -> u64 {
        let version = self.next_version;
        self.next_version += 1;
        let expires_us = Some(self.now_us.saturating_add((ttl_s as i64).saturating_mul(1_000_000)));
        let row = KvRow { value: value.to_string(), version, expires_us, updated_us: self.now_us };
        let key = permit_key(name, slot);
        self.overlay.put_kv(key.clone(), Some(row.clone()));
        self.effects.push(Effect::KvPut { key, row });
        version
    }

    fn remove(&mut self, name: &str, slot: u32) {
        let key = permit_key(name, slot);
        self.overlay.put_kv(key.clone(), None);
        self.effects.push(Effect::KvDelete { key });
    }
}

/// The most slots a semaphore has.
pub const MAX_LIMIT: u32 = 1024;

pub fn plan_locks(store: &Store, overlay: &mut Overlay, now_us: i64, ops: &[LockOp]) -> (Vec<Effect>, Vec<LockResult>) {
    let next_version = overlay.next_kv_version(store);
    let mut p = Permits { store, overlay, now_us, next_version, effects: Vec::new() };
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        results.push(match op {
            LockOp::Acquire { name, ttl_s, owner, limit } => {
                let holders = p.holders(name, *limit);
                if let Some(h) = holders.iter().find(|h| owner.is_some() && h.owner == *owner) {
                    LockResult::Granted { slot: h.slot, token: h.row.version, owner: owner.clone(), already: true }
                } else if let Some(slot) = (0..*limit).find(|s| !holders.iter().any(|h| h.slot == *s)) {
                    let since = crate::iso_time::iso_time(now_us);
                    let token = p.write(name, slot, json!({"owner": owner, "since": since}), *ttl_s);
                    LockResult::Granted { slot, token, owner: owner.clone(), already: false }
                } else {
                    LockResult::Held { holders }
                }
            }
            LockOp::Renew { name, token, ttl_s, slot, owner } => match p.live(name, *slot) {
                Some(row) if row.version == *token || (owner.is_some() && owner_of(&row) == *owner) => {
                    let value = serde_json::from_str::<Value>(&row.value).unwrap_or_else(|_| json!({}));
                    let token = p.write(name, *slot, value, *ttl_s);
                    LockResult::Renewed { slot: *slot, token }
                }
                Some(row) => {
                    LockResult::Lost { slot: *slot, holders: vec![Holder { slot: *slot, owner: owner_of(&row), row }] }
                }
                None => LockResult::Lost { slot: *slot, holders: vec![] },
            },
            LockOp::Release { name, token, slot } => match p.live(name, *slot) {
                Some(row) if row.version == *token => {
                    p.remove(name, *slot);
                    LockResult::Released { slot: *slot }
                }
                Some(row) => {
                    LockResult::Lost { slot: *slot, holders: vec![Holder { slot: *slot, owner: owner_of(&row), row }] }
                }
                None => LockResult::Lost { slot: *slot, holders: vec![] },
            },
            LockOp::Get { name } => LockResult::Status { holders: p.holders(name, MAX_LIMIT) },
        });
    }
    let Permits { next_version, effects, overlay, .. } = p;
    // Versions count rows written: a round of reads writes none, and leaves
    // no decision behind (the overlay's consistency check holds it to that).
    if !effects.is_empty() {
        overlay.set_next_kv_version(next_version);
    }
    (effects, results)
}
