//! The cluster version gate (recovery.md, "A rolling restart goes wrong"):
//! a rollback starts the previous release on the same directory, which is
//! safe for as long as every entry in the log is one that release can read.
//! So a build names the version of the effect catalogue it reads and
//! writes, the cluster keeps the version its leader may write (a KV row of
//! its own), and the leader raises that only once every member answers that
//! it reads the new one. From then on an older build refuses to boot on the
//! store, naming both versions, instead of misreading entries.

use crate::internal_kv::CLUSTER;
use crate::planner::kv::{Expiry, KvKind, KvOp};
use crate::store::Store;

/// The effect catalogue this build reads and writes. Raise it when an
/// effect is added or changes its encoding. 2: a Kafka produce's batch is
/// stored as it came, one piece of its message record (flag 2). 3: Kafka
/// transactions (`KafkaTxn`, `AbortedTxn`, `HideOffsets`). 4: share groups
/// (`Acquire`, `Release`, `Renew`, and the `shares` keyspace). 5: Kafka
/// idempotence by producer state (`ProducerBatch`, `ForgetProducers`, the
/// `producers` keyspace), and no dedup row for a Kafka record.
pub const EFFECT_CATALOGUE: u32 = 5;
/// The cluster's row, in the `queen-cluster` namespace.
const KEY: &str = "effect-catalogue";

/// `/health`'s `raft.catalogue`: what this build reads, and what the
/// cluster writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Versions {
    pub build: u32,
    pub cluster: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "this build reads effect catalogue version {build}, and the cluster this store belongs to writes version {cluster}: \
     start a build that reads version {cluster} or later on it, never an older one"
)]
pub struct TooOld {
    pub build: u32,
    pub cluster: u32,
}

/// The catalogue version the cluster writes: 1 until a leader raised it.
pub fn cluster_catalogue(store: &Store) -> u32 {
    store.catalogue()
}

/// Refuses a build older than the cluster its store belongs to.
pub fn check(build: u32, store: &Store) -> Result<(), TooOld> {
    let cluster = cluster_catalogue(store);
    if cluster > build {
        return Err(TooOld { build, cluster });
    }
    Ok(())
}

/// The write that raises the cluster's version to `to`.
pub fn raise(to: u32) -> KvOp {
    KvOp {
        ns: CLUSTER.to_string(),
        kind: KvKind::Put { key: KEY.to_string(), value: to.to_string(), expiry: Expiry::Forever, expect: None },
        required: true,
    }
}

/// The version the leader may raise the cluster to, given what each member
/// reads (`None` for a member that did not answer): the lowest of them,
/// when every member answered.
pub fn agreed(members: &[Option<u32>]) -> Option<u32> {
    members.iter().copied().collect::<Option<Vec<u32>>>()?.into_iter().min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::kv::row_key;

    #[test]
    fn the_cluster_moves_to_what_every_member_reads_and_an_older_build_is_refused() {
        assert_eq!(agreed(&[Some(2), Some(3), Some(2)]), Some(2));
        assert_eq!(agreed(&[Some(2), None]), None, "a member that did not answer holds the version");
        let mut store = Store::default();
        assert_eq!(cluster_catalogue(&store), 1);
        assert_eq!(check(1, &store), Ok(()));
        let row = crate::store::rows::KvRow { value: "2".into(), version: 1, expires_us: None, updated_us: 0 };
        store.put_kv(row_key(CLUSTER, KEY), row);
        assert_eq!(check(1, &store), Err(TooOld { build: 1, cluster: 2 }));
        assert_eq!(check(2, &store), Ok(()));
    }
}
