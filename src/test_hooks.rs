//! The seams the tests that run real processes reach, through environment
//! variables a node reads at boot. They are not settings: `config.rs` lists
//! what an operator sets, and `--help` shows none of these. Each makes a
//! node do what a test must see handled, and nothing else reads them.

use std::path::PathBuf;

/// `QUEEN_TEST_SYNC_LEDGER`: append `<file> <length>` to this file after
/// every fsync, so that a power-loss test can drop every byte never synced.
const SYNC_LEDGER: &str = "QUEEN_TEST_SYNC_LEDGER";
/// `QUEEN_TEST_EFFECT_CATALOGUE`: the effect catalogue version this build
/// says it reads, to rehearse the cluster's version gate.
const EFFECT_CATALOGUE: &str = "QUEEN_TEST_EFFECT_CATALOGUE";
/// `QUEEN_TEST_APPLY_REFUSE_KV_KEY`: in a cluster, apply refuses a KV write
/// to this key (`NAMESPACE/KEY`), as a bug would, to rehearse
/// `QUEEN_RAFT_APPLY_SKIP`.
const APPLY_REFUSE_KV_KEY: &str = "QUEEN_TEST_APPLY_REFUSE_KV_KEY";

#[derive(Debug, Default, Clone)]
pub struct TestHooks {
    pub sync_ledger: Option<PathBuf>,
    pub effect_catalogue: Option<u32>,
    /// As a key of the store's KV rows (`NAMESPACE\0KEY`).
    pub apply_refuse_kv_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{EFFECT_CATALOGUE}={0:?} is not a whole number")]
pub struct TestHookError(String);

impl TestHooks {
    /// The hooks this process's environment sets.
    pub fn from_env() -> Result<Self, TestHookError> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let effect_catalogue = match var(EFFECT_CATALOGUE) {
            Some(v) => Some(v.parse().map_err(|_| TestHookError(v))?),
            None => None,
        };
        Ok(Self {
            sync_ledger: var(SYNC_LEDGER).map(PathBuf::from),
            effect_catalogue,
            apply_refuse_kv_key: var(APPLY_REFUSE_KV_KEY).map(|k| k.replacen('/', "\0", 1)),
        })
    }
}
