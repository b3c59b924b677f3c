//! The store checkpoint, `store/data.mdb` (LMDB through heed): one database
//! per keyspace, every value prefixed with an xxh3 over its keyspace, key and
//! bytes, and in `meta` the applied index and each keyspace's row count,
//! written in the same transaction as the rows.

use super::keyspace::RowChange;
use super::rows::MembershipRow;
use super::MEMBERSHIP_ROW;
use crate::log_id::LogId;
use heed::types::Bytes;
use heed::{CompactionOption, Database, Env, EnvOpenOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::Xxh3;

/// Every keyspace, `meta` last so its counts see the other writes.
pub const KEYSPACES: [&str; 16] = [
    "queues",
    "partitions",
    "dedup",
    "cursors",
    "groups",
    "dlq",
    "kv",
    "timers",
    "commit_metadata",
    "membership",
    "kafka_txns",
    "aborted_txns",
    "kafka_hidden",
    "shares",
    "producers",
    "meta",
];

/// Where a checkpoint stands (`CheckpointFile::standing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub applied: LogId,
    pub leader: u64,
    /// The membership row (`MEMBERSHIP_ROW`), on a cluster node.
    pub membership: Option<MembershipRow>,
}

/// LMDB reserves address space, not disk; this is the most the store may hold.
const MAP_SIZE: usize = 1 << 40;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("store checkpoint {path}: {source}")]
    Lmdb { path: PathBuf, source: heed::Error },
    #[error("store value fails its checksum: keyspace {keyspace}, key {key} in {path}")]
    ValueChecksum { path: PathBuf, keyspace: &'static str, key: String },
    #[error("store keys out of order in keyspace {keyspace} of {path}")]
    KeyOrder { path: PathBuf, keyspace: &'static str },
    #[error("store keyspace {keyspace} of {path} holds {found} rows where the checkpoint recorded {recorded}")]
    RowCount { path: PathBuf, keyspace: &'static str, found: u64, recorded: u64 },
    #[error("store row in keyspace {keyspace} of {path} does not decode: {reason}")]
    Undecodable { path: PathBuf, keyspace: &'static str, reason: String },
}

impl CheckpointError {
    /// Whether the volume is full: a checkpoint that could not be written
    /// then damaged nothing (LMDB aborts the transaction), and the log
    /// holds everything since the last one.
    pub fn out_of_space(&self) -> bool {
        matches!(self, CheckpointError::Lmdb { source: heed::Error::Io(e), .. } if e.raw_os_error() == Some(libc::ENOSPC))
    }
}

pub fn row_checksum(keyspace: &str, key: &[u8], value: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(keyspace.as_bytes());
    h.update(&[0]);
    h.update(&(key.len() as u32).to_le_bytes());
    h.update(key);
    h.update(value);
    h.digest()
}

fn seal(keyspace: &str, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + value.len());
    out.extend_from_slice(&row_checksum(keyspace, key, value).to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// The value of a stored row if its checksum verifies.
pub fn unseal<'a>(keyspace: &str, key: &[u8], stored: &'a [u8]) -> Option<&'a [u8]> {
    let (sum, value) = stored.split_at_checked(8)?;
    (u64::from_le_bytes(sum.try_into().ok()?) == row_checksum(keyspace, key, value)).then_some(value)
}

/// Every verified row of a checkpoint, by keyspace, in key order.
pub type LoadedRows = BTreeMap<&'static str, Vec<(Vec<u8>, Vec<u8>)>>;

pub struct CheckpointFile {
    env: Env,
    dbs: Vec<(&'static str, Database<Bytes, Bytes>)>,
    path: PathBuf,
}

impl CheckpointFile {
    pub fn open(dir: &Path) -> Result<Self, CheckpointError> {
        let path = dir.join("data.mdb");
        let lmdb = |source| CheckpointError::Lmdb { path: path.clone(), source };
        std::fs::create_dir_all(dir).map_err(|e| lmdb(heed::Error::Io(e)))?;
        // SAFETY: the data directory belongs to this one process; nothing else
        // maps data.mdb while it runs.
        let env = unsafe { EnvOpenOptions::new().map_size(MAP_SIZE).max_dbs(KEYSPACES.len() as u32).open(dir) }
            .map_err(lmdb)?;
        let mut wtxn = env.write_txn().map_err(lmdb)?;
        let mut dbs = Vec::new();
        for name in KEYSPACES {
            dbs.push((name, env.create_database(&mut wtxn, Some(name)).map_err(lmdb)?));
        }
        wtxn.commit().map_err(lmdb)?;
        Ok(Self { env, dbs, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Copies the last committed checkpoint to `dest`, a new `data.mdb`, in
    /// one read transaction and compacted, and syncs it: a snapshot's store.
    pub fn copy_to(&self, dest: &Path) -> Result<(), CheckpointError> {
        let file = self.env.copy_to_path(dest, CompactionOption::Enabled).map_err(self.lmdb())?;
        file.sync_all().map_err(|e| self.lmdb()(heed::Error::Io(e)))
    }

    /// Where the last committed checkpoint stands: the applied log id and
    /// its leader, and the cluster's membership then, read in one
    /// transaction.
    pub fn standing(&self) -> Result<Standing, CheckpointError> {
        let rtxn = self.env.read_txn().map_err(self.lmdb())?;
        let db = |name: &str| self.dbs.iter().find(|(n, _)| *n == name).expect("a keyspace of the store").1;
        let value = |keyspace: &'static str, key: &str| -> Result<Option<Vec<u8>>, CheckpointError> {
            let Some(stored) = db(keyspace).get(&rtxn, key.as_bytes()).map_err(self.lmdb())? else { return Ok(None) };
            let bytes = unseal(keyspace, key.as_bytes(), stored).ok_or_else(|| CheckpointError::ValueChecksum {
                path: self.path.clone(),
                keyspace,
                key: key.to_string(),
            })?;
            Ok(Some(bytes.to_vec()))
        };
        let decode = |keyspace: &'static str, e: &dyn std::fmt::Display| CheckpointError::Undecodable {
            path: self.path.clone(),
            keyspace,
            reason: e.to_string(),
        };
        let number = |key: &str| -> Result<u64, CheckpointError> {
            let Some(bytes) = value("meta", key)? else { return Ok(0) };
            crate::codec::from_bytes(&bytes).map_err(|e| decode("meta", &e))
        };
        let membership = match value("membership", MEMBERSHIP_ROW)? {
            Some(bytes) => Some(crate::codec::from_bytes(&bytes).map_err(|e| decode("membership", &e))?),
            None => None,
        };
        Ok(Standing {
            applied: LogId::new(number("applied_term")?, number("applied_index")?),
            leader: number("applied_leader")?,
            membership,
        })
    }

    fn lmdb(&self) -> impl Fn(heed::Error) -> CheckpointError + '_ {
        |source| CheckpointError::Lmdb { path: self.path.clone(), source }
    }

    /// Writes the changed rows and `meta`, with each keyspace's row count, in
    /// one transaction, and commits it (LMDB syncs on commit).
    pub fn write(&self, changes: &[RowChange], meta: &[(&str, u64)]) -> Result<(), CheckpointError> {
        let mut wtxn = self.env.write_txn().map_err(self.lmdb())?;
        let db = |name: &str| self.dbs.iter().find(|(n, _)| *n == name).expect("known keyspace").1;
        for c in changes {
            let d = db(c.keyspace);
            match &c.value {
                Some(v) => d.put(&mut wtxn, &c.key, &seal(c.keyspace, &c.key, v)).map_err(self.lmdb())?,
                None => {
                    d.delete(&mut wtxn, &c.key).map_err(self.lmdb())?;
                }
            }
        }
        let mut meta_rows: Vec<(String, u64)> = meta.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        for (name, d) in &self.dbs {
            if *name != "meta" {
                meta_rows.push((format!("rows:{name}"), d.len(&wtxn).map_err(self.lmdb())?));
            }
        }
        let meta_db = db("meta");
        for (k, v) in meta_rows {
            let value = crate::codec::to_bytes(&v);
            meta_db.put(&mut wtxn, k.as_bytes(), &seal("meta", k.as_bytes(), &value)).map_err(self.lmdb())?;
        }
        wtxn.commit().map_err(self.lmdb())
    }

    /// Reads every row, verifying each checksum, the key order and the row
    /// counts recorded in `meta`.
    pub fn load(&self) -> Result<LoadedRows, CheckpointError> {
        let rtxn = self.env.read_txn().map_err(self.lmdb())?;
        let mut out = LoadedRows::new();
        for (name, db) in &self.dbs {
            let mut rows: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for item in db.iter(&rtxn).map_err(self.lmdb())? {
                let (k, stored) = item.map_err(self.lmdb())?;
                if rows.last().is_some_and(|(prev, _)| prev.as_slice() >= k) {
                    return Err(CheckpointError::KeyOrder { path: self.path.clone(), keyspace: name });
                }
                let value = unseal(name, k, stored).ok_or_else(|| CheckpointError::ValueChecksum {
                    path: self.path.clone(),
                    keyspace: name,
                    key: String::from_utf8_lossy(k).into_owned(),
                })?;
                rows.push((k.to_vec(), value.to_vec()));
            }
            out.insert(name, rows);
        }
        let meta: BTreeMap<Vec<u8>, u64> = out["meta"]
            .iter()
            .map(|(k, v)| {
                crate::codec::from_bytes::<u64>(v).map(|n| (k.clone(), n)).map_err(|e| CheckpointError::Undecodable {
                    path: self.path.clone(),
                    keyspace: "meta",
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        for name in KEYSPACES.iter().filter(|n| **n != "meta") {
            let recorded = meta.get(format!("rows:{name}").as_bytes()).copied().unwrap_or(0);
            let found = out[name].len() as u64;
            if found != recorded {
                return Err(CheckpointError::RowCount { path: self.path.clone(), keyspace: name, found, recorded });
            }
        }
        Ok(out)
    }

    /// Verifies up to `limit` rows of `keyspace` after `after`; answers the
    /// last key verified, or `None` at the end of the keyspace.
    pub fn scrub_step(
        &self,
        keyspace: &'static str,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Option<Vec<u8>>, CheckpointError> {
        use std::ops::Bound;
        let db = self.dbs.iter().find(|(n, _)| *n == keyspace).expect("known keyspace").1;
        let rtxn = self.env.read_txn().map_err(self.lmdb())?;
        let range = (after.map_or(Bound::Unbounded, Bound::Excluded), Bound::Unbounded);
        let mut last = None;
        for item in db.range(&rtxn, &range).map_err(self.lmdb())?.take(limit) {
            let (k, stored) = item.map_err(self.lmdb())?;
            if unseal(keyspace, k, stored).is_none() {
                return Err(CheckpointError::ValueChecksum {
                    path: self.path.clone(),
                    keyspace,
                    key: String::from_utf8_lossy(k).into_owned(),
                });
            }
            last = Some(k.to_vec());
        }
        Ok(last)
    }
}
