//! Apply in a cluster, guarded. A committed entry that apply refuses (a
//! broken invariant: a bug in Queen) is refused the same way on every node,
//! and a restart replays it and refuses it again. So the node does not die
//! on it: it stops applying, keeps serving `/health`, and names the way out
//! there and in its APPLY FAILED line: the entry's index and digest, which
//! `QUEEN_RAFT_APPLY_SKIP=INDEX:DIGEST` on every node turns into a no-op
//! (recovery.md, "A poisoned entry stops every node").
//!
//! A skip is kept in `raft/apply_skipped.json`, so the entry stays a no-op
//! on this node after the variable is removed, and `/health` keeps listing
//! it.

use crate::planner::apply::{apply_effect, begin, finish};
use crate::planner::effect::{Effect, Entry};
use crate::qlog::files::Location;
use crate::storage::{read_settled, replace_durable, Storage};
use crate::store::Store;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The file that keeps this node's skips.
pub const SKIPPED_FILE: &str = "apply_skipped.json";

#[derive(Debug, thiserror::Error)]
pub enum ApplyGuardError {
    #[error("QUEEN_RAFT_APPLY_SKIP entry {0:?} is not INDEX:DIGEST (the index and 16 hex digits, as /health's apply.failure names them)")]
    Setting(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} does not decode ({why}): it lists the entries this node applies as no-ops; restore it, or move it aside and set QUEEN_RAFT_APPLY_SKIP again")]
    Damaged { path: PathBuf, why: String },
}

/// The entry apply refused, as `/health` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyFailure {
    /// `deterministic`: apply itself refused, so every node refuses the
    /// same entry. (A node whose own disk fails stops through its syncer.)
    pub class: &'static str,
    pub command: String,
    pub digest: String,
    /// `#N kind`: which of the entry's effects was refused.
    pub effect: String,
    pub error: String,
    pub index: u64,
    pub term: u64,
}

/// An entry applied as a no-op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub index: u64,
    pub term: u64,
    pub digest: String,
    /// What the entry held, for the bug report.
    pub held: String,
}

/// `/health`'s `raft.apply` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    pub failure: Option<ApplyFailure>,
    pub skipped: Vec<Skipped>,
}

pub struct ApplyGuard {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    /// What QUEEN_RAFT_APPLY_SKIP asks: index → digest.
    asked: BTreeMap<u64, String>,
    report: Mutex<ApplyReport>,
    /// A test seam: apply refuses a KV write to this key (namespace\0key),
    /// as a bug would, on every node started with it.
    refuse_kv_key: Option<String>,
}

/// An entry's digest: xxh3 over its log id, body and message records, as
/// the leader replicated them, so every node computes the same one.
pub fn digest(entry: &Entry) -> String {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&entry.id.term.to_le_bytes());
    bytes.extend_from_slice(&entry.id.index.to_le_bytes());
    bytes.extend_from_slice(&entry.body.encode());
    for m in &entry.messages {
        m.encode_into(&mut bytes);
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
}

/// The effects of `entry`, named in order: what it held.
fn summary(entry: &Entry) -> String {
    let kinds: Vec<&str> = entry.body.effects.iter().map(Effect::name).collect();
    format!("entry {} of {} effects ({})", entry.id, kinds.len(), kinds.join(", "))
}

fn parse_asked(setting: &str) -> Result<BTreeMap<u64, String>, ApplyGuardError> {
    let mut asked = BTreeMap::new();
    for item in setting.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || ApplyGuardError::Setting(item.to_string());
        let (index, digest) = item.split_once(':').ok_or_else(bad)?;
        let index: u64 = index.trim().parse().map_err(|_| bad())?;
        let digest = digest.trim().to_ascii_lowercase();
        if digest.len() != 16 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        asked.insert(index, digest);
    }
    Ok(asked)
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<String>(), panic.downcast_ref::<&str>()) {
        (Some(s), _) => s.clone(),
        (_, Some(s)) => s.to_string(),
        _ => "apply panicked".to_string(),
    }
}

impl ApplyGuard {
    /// The guard of the node whose raft directory is `raft_dir`, with
    /// QUEEN_RAFT_APPLY_SKIP's value.
    pub fn open(
        storage: Arc<dyn Storage>,
        raft_dir: &Path,
        setting: Option<&str>,
        refuse_kv_key: Option<String>,
    ) -> Result<Self, ApplyGuardError> {
        let asked = parse_asked(setting.unwrap_or_default())?;
        let path = raft_dir.join(SKIPPED_FILE);
        let skipped = match read_settled(&*storage, &path) {
            Ok(bytes) => serde_json::from_slice::<Vec<Skipped>>(&bytes)
                .map_err(|e| ApplyGuardError::Damaged { path: path.clone(), why: e.to_string() })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
            Err(source) => return Err(ApplyGuardError::Io { path, source }),
        };
        let report = Mutex::new(ApplyReport { failure: None, skipped });
        Ok(Self { storage, path, asked, report, refuse_kv_key })
    }

    pub fn report(&self) -> ApplyReport {
        self.report.lock().expect("apply report lock").clone()
    }

    /// Whether apply refused an entry: nothing applies after it.
    pub fn failed(&self) -> bool {
        self.report.lock().expect("apply report lock").failure.is_some()
    }

    /// Applies `entry` (false when it was applied before), as a no-op when
    /// it is to be skipped; `Err` when apply refuses it, and for every
    /// entry after that one.
    pub fn apply(&self, store: &mut Store, entry: &Entry, locations: &[Location]) -> Result<bool, Box<ApplyFailure>> {
        if let Some(failure) = &self.report.lock().expect("apply report lock").failure {
            return Err(Box::new(failure.clone()));
        }
        if !begin(store, entry, locations) {
            return Ok(false);
        }
        if self.skips(entry) {
            finish(store, entry);
            return Ok(true);
        }
        for (i, effect) in entry.body.effects.iter().enumerate() {
            let applied = match effect {
                Effect::KvPut { key, .. } if self.refuse_kv_key.as_ref() == Some(key) => {
                    Err(format!("apply refuses KV key {key:?} (the test switch QUEEN_TEST_APPLY_REFUSE_KV_KEY)"))
                }
                _ => catch_unwind(AssertUnwindSafe(|| apply_effect(store, entry, effect, locations)))
                    .map_err(|panic| panic_text(&*panic)),
            };
            if let Err(error) = applied {
                let failure = ApplyFailure {
                    class: "deterministic",
                    command: summary(entry),
                    digest: digest(entry),
                    effect: format!("#{i} {}", effect.name()),
                    error,
                    index: entry.id.index,
                    term: entry.id.term,
                };
                tracing::error!(
                    index = failure.index,
                    digest = %failure.digest,
                    effect = %failure.effect,
                    error = %failure.error,
                    "APPLY FAILED: committed entry {} is refused by apply, and every node refuses it the same way; \
                     if two nodes agree on index and digest, set QUEEN_RAFT_APPLY_SKIP={}:{} on every node and restart them (recovery.md)",
                    failure.index,
                    failure.index,
                    failure.digest
                );
                self.report.lock().expect("apply report lock").failure = Some(failure.clone());
                return Err(Box::new(failure));
            }
        }
        finish(store, entry);
        Ok(true)
    }

    /// Whether `entry` is one to apply as a no-op: asked for by the setting
    /// with its digest (and then kept), or kept from before.
    /// The digest is computed only for an index a skip names: apply pays
    /// nothing for the guard on every other entry.
    fn skips(&self, entry: &Entry) -> bool {
        let index = entry.id.index;
        let mut report = self.report.lock().expect("apply report lock");
        let kept = report.skipped.iter().any(|s| s.index == index);
        let asked = self.asked.get(&index);
        if !kept && asked.is_none() {
            return false;
        }
        let digest = digest(entry);
        if report.skipped.iter().any(|s| s.index == index && s.digest == digest) {
            return true;
        }
        let Some(asked) = asked else { return false };
        if *asked != digest {
            tracing::error!(
                index,
                asked = %asked,
                found = %digest,
                "QUEEN_RAFT_APPLY_SKIP names entry {index} with digest {asked}, and this node's entry {index} has digest {digest}: not skipped (a different entry, or this node's log differs)"
            );
            return false;
        }
        let skipped = Skipped { index, term: entry.id.term, digest, held: summary(entry) };
        tracing::warn!(held = %skipped.held, "QUEEN_RAFT_APPLY_SKIP: entry {index} is REPLACED by a skip marker: none of its effects apply");
        report.skipped.push(skipped);
        let bytes = serde_json::to_vec_pretty(&report.skipped).expect("skips serialize");
        if let Err(e) = replace_durable(&*self.storage, &self.path, &bytes) {
            // The entry is skipped now; the next boot still skips it while
            // the variable stays set.
            tracing::warn!(path = %self.path.display(), error = %e, "the skip marker could not be saved; keep QUEEN_RAFT_APPLY_SKIP set");
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_takes_index_digest_pairs_and_names_a_mistake() {
        let asked = parse_asked("4:3f60b0096ef89f56, 9:00000000000000AA").unwrap();
        assert_eq!(asked[&4], "3f60b0096ef89f56");
        assert_eq!(asked[&9], "00000000000000aa");
        for bad in ["4", "x:3f60b0096ef89f56", "4:3f60", "4:3f60b0096ef89fzz"] {
            assert!(matches!(parse_asked(bad), Err(ApplyGuardError::Setting(s)) if s == bad), "{bad}");
        }
    }
}
