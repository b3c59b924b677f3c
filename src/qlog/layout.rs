//! The layout of `qlog/`, fixed when the directory is created: `LANES`,
//! `SHARDS`, `REPLICATOR` (which replicator wrote the directory; a data
//! directory never moves between replicators), `GROUPS` (the raft groups
//! of a cluster, `QUEEN_RAFT_GROUPS`; a directory founded before the file
//! existed has one) and `FORMAT` (the version of the record and checkpoint
//! formats it holds).

use crate::storage::{read_settled, replace_durable, Storage};
use std::path::{Path, PathBuf};

/// The log of entries that touch no queue.
pub const SYSTEM_LOG: u64 = 0;

/// The on-disk format this build writes and reads (`docs/storage.md`).
/// 2: varint record heads, dedup rows keyed by offset. 3: partition rows
/// carry `txns_start`, and entries the `Retain` effect. 4: entry records
/// name their leader (term, node id), membership entries and the
/// `membership` keyspace. 5: a message record may hold a Kafka record
/// batch as it was produced (piece flag 2). A directory without a `FORMAT`
/// file was written by a build before format 2.
pub const FORMAT: u32 = 5;
/// The format a raft directory writes: there what the entries may hold is
/// the cluster's effect catalogue's to say (`version_gate.rs`), so that
/// the previous release still boots on the directory, as a rollback needs,
/// until the leader raises the catalogue; Kafka batches come with
/// catalogue 2.
pub const RAFT_FORMAT: u32 = 4;
/// The formats this build upgrades at boot to the one it writes: their
/// records read as they are (an entry record of kind 2 as led by the
/// single node), so the upgrade rewrites `FORMAT` and nothing else, once
/// recovery has read the directory.
pub const UPGRADED_FORMATS: [u32; 2] = [3, 4];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Independent group-commit pipelines; this build runs one.
    pub lanes: u32,
    /// 0: one log per queue. K > 0: queue id % K picks one of K shared logs.
    pub shards: u32,
    pub replicator: String,
    /// The raft groups of the cluster, group 0 included (1 on a single node).
    pub groups: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} holds {found:?}, which is not a valid value")]
    Invalid { path: PathBuf, found: String },
    #[error("{path}: this data directory was written by the {found} replicator and this node runs the {wanted} replicator; a data directory never moves between replicators")]
    ForeignReplicator { path: PathBuf, found: String, wanted: String },
    #[error("{path} is missing while the qlog directory exists: the layout is fixed when the directory is created")]
    Missing { path: PathBuf },
    #[error("{path}: this data directory was founded with QUEEN_RAFT_GROUPS={found} and this node was started with QUEEN_RAFT_GROUPS={wanted}; the number of raft groups is fixed when the directory is founded")]
    ForeignGroups { path: PathBuf, found: u32, wanted: u32 },
    #[error("{path}: this data directory holds on-disk format {found} and this build reads format {wanted} (and upgrades the older formats 3 and 4 at boot) only; start it with the build that wrote it, or on a new directory")]
    ForeignFormat { path: PathBuf, found: String, wanted: u32 },
}

impl Layout {
    /// The log a queue's records go to.
    pub fn log_of(&self, queue: u64) -> u64 {
        if self.shards == 0 {
            queue
        } else {
            queue % self.shards as u64
        }
    }

    /// Reads the layout of an existing `qlog/`, or writes `wanted` into a
    /// new one of format `format` (`FORMAT`, or `RAFT_FORMAT`); answers it
    /// with the directory's format: `format`, or an older one of
    /// `UPGRADED_FORMATS`, which `upgrade_format` then rewrites.
    pub fn open_or_create(
        storage: &dyn Storage,
        root: &Path,
        wanted: &Layout,
        format: u32,
    ) -> Result<(Layout, u32), LayoutError> {
        let wanted_format = format;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LayoutError::Io { path, source }
        };
        // LANES is written last, once the others are durable, and its
        // presence is what says the layout is whole: a founding cut short
        // before it is founded again. Written first, a power cut could
        // leave LANES without GROUPS or FORMAT, which the next boot would
        // read as a directory of one group and format 1, and refuse.
        let lanes_path = root.join("LANES");
        if !storage.exists(&lanes_path) {
            storage.create_dir_all(root).map_err(io(root))?;
            for (name, value) in [
                ("SHARDS", wanted.shards.to_string()),
                ("REPLICATOR", wanted.replicator.clone()),
                ("GROUPS", wanted.groups.to_string()),
                ("FORMAT", wanted_format.to_string()),
            ] {
                let path = root.join(name);
                storage.write_durable(&path, format!("{value}\n").as_bytes()).map_err(io(&path))?;
            }
            storage.sync_dir(root).map_err(io(root))?;
            let lanes = format!("{}\n", wanted.lanes);
            storage.write_durable(&lanes_path, lanes.as_bytes()).map_err(io(&lanes_path))?;
            storage.sync_dir(root).map_err(io(root))?;
            if let Some(parent) = root.parent() {
                storage.sync_dir(parent).map_err(io(parent))?;
            }
            return Ok((wanted.clone(), wanted_format));
        }
        let read = |name: &str| -> Result<String, LayoutError> {
            let path = root.join(name);
            match read_settled(storage, &path) {
                Ok(s) => Ok(String::from_utf8_lossy(&s).trim().to_string()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LayoutError::Missing { path }),
                Err(e) => Err(LayoutError::Io { path, source: e }),
            }
        };
        let number = |name: &str| -> Result<u32, LayoutError> {
            let found = read(name)?;
            found.parse().map_err(|_| LayoutError::Invalid { path: root.join(name), found })
        };
        let groups = match number("GROUPS") {
            Err(LayoutError::Missing { .. }) => 1,
            other => other?,
        };
        let layout =
            Layout { lanes: number("LANES")?, shards: number("SHARDS")?, replicator: read("REPLICATOR")?, groups };
        let format = match read("FORMAT") {
            Ok(found) => found,
            Err(LayoutError::Missing { .. }) => "1 (no FORMAT file)".to_string(),
            Err(e) => return Err(e),
        };
        let format = match format.parse::<u32>() {
            Ok(f) if f == wanted_format || (UPGRADED_FORMATS.contains(&f) && f < wanted_format) => f,
            _ => {
                let path = root.join("FORMAT");
                return Err(LayoutError::ForeignFormat { path, found: format, wanted: wanted_format });
            }
        };
        if layout.replicator != wanted.replicator {
            return Err(LayoutError::ForeignReplicator {
                path: root.join("REPLICATOR"),
                found: layout.replicator,
                wanted: wanted.replicator.clone(),
            });
        }
        if layout.groups != wanted.groups {
            let path = root.join("GROUPS");
            return Err(LayoutError::ForeignGroups { path, found: layout.groups, wanted: wanted.groups });
        }
        Ok((layout, format))
    }

    /// Rewrites the `FORMAT` of an older directory that recovery has read as
    /// `format`: durably, before this build writes its first record of that
    /// format (a build of the older one refuses the directory from then on).
    pub fn upgrade_format(storage: &dyn Storage, root: &Path, format: u32) -> Result<(), LayoutError> {
        let path = root.join("FORMAT");
        replace_durable(storage, &path, format!("{format}\n").as_bytes())
            .map_err(|source| LayoutError::Io { path, source })
    }
}
