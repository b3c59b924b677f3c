//! The cluster settings a node boots with: `QUEEN_RAFT_NODE_ID`,
//! `QUEEN_RAFT_PEERS`, `QUEEN_RAFT_TOKEN`, `QUEEN_RAFT_ADDR`,
//! `QUEEN_RAFT_JOIN` and `QUEEN_RAFT_GROUPS`, checked before anything opens, so a mistake is one
//! FATAL line that names it.

use super::replicator::Cluster;
use super::version_gate::EFFECT_CATALOGUE;
use crate::config::Settings;
use crate::store::rows::Member;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FoundingError {
    #[error("QUEEN_RAFT_NODE_ID and QUEEN_RAFT_PEERS are set together or not at all (a cluster needs both)")]
    Half,
    #[error("QUEEN_RAFT_PEERS entry {0:?} is not ID=RAFT_ADDR[/HTTP_ADDR[/KAFKA_ADDR]] with a numeric id above 0")]
    Entry(String),
    #[error("QUEEN_RAFT_PEERS names node {0} twice")]
    Twice(u64),
    #[error("QUEEN_RAFT_NODE_ID={0} is not in QUEEN_RAFT_PEERS: the peer list is wrong")]
    NotListed(u64),
    #[error("QUEEN_RAFT_TOKEN is not set: a cluster's nodes admit each other by it, so every node needs the same one")]
    NoToken,
    #[error("QUEEN_RAFT_GROUPS={0} is not between 1 and {MAX_GROUPS}")]
    Groups(u32),
    #[error(
        "QUEEN_RAFT_GROUPS={0} needs a cluster (QUEEN_RAFT_NODE_ID and QUEEN_RAFT_PEERS): a single node runs one group"
    )]
    GroupsAlone(u32),
}

/// The most raft groups a cluster may be founded with: each is a raft log,
/// a store and a replicator on every node.
pub const MAX_GROUPS: u32 = 64;

/// Parses `ID=RAFT_ADDR[/HTTP_ADDR[/KAFKA_ADDR]]`, comma-separated.
pub fn parse_peers(text: &str) -> Result<BTreeMap<u64, Member>, FoundingError> {
    let mut peers = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || FoundingError::Entry(entry.to_string());
        let (id, addrs) = entry.split_once('=').ok_or_else(bad)?;
        let id: u64 = id.trim().parse().ok().filter(|id| *id > 0).ok_or_else(bad)?;
        let mut parts = addrs.split('/').map(str::trim);
        let raft = parts.next().filter(|a| !a.is_empty()).ok_or_else(bad)?.to_string();
        let http = parts.next().unwrap_or_default().to_string();
        let kafka = parts.next().unwrap_or_default().to_string();
        if parts.next().is_some() {
            return Err(bad());
        }
        if peers.insert(id, Member { raft, http, kafka }).is_some() {
            return Err(FoundingError::Twice(id));
        }
    }
    Ok(peers)
}

/// The cluster this node belongs to, or `None` for a single node; a test
/// may have its build say it reads another effect catalogue version.
pub fn cluster(settings: &Settings, catalogue: Option<u32>) -> Result<Option<Cluster>, FoundingError> {
    let groups = settings.raft_groups;
    if !(1..=MAX_GROUPS).contains(&groups) {
        return Err(FoundingError::Groups(groups));
    }
    let (me, peers) = match (settings.raft_node_id, settings.raft_peers.as_deref()) {
        (None, None) if groups > 1 => return Err(FoundingError::GroupsAlone(groups)),
        (None, None) => return Ok(None),
        (Some(me), Some(peers)) => (me, parse_peers(peers)?),
        _ => return Err(FoundingError::Half),
    };
    if !peers.contains_key(&me) {
        return Err(FoundingError::NotListed(me));
    }
    let token = settings.raft_token.clone().filter(|t| !t.is_empty()).ok_or(FoundingError::NoToken)?;
    Ok(Some(Cluster {
        me,
        peers,
        token,
        listen: settings.raft_addr,
        join: settings.raft_join,
        write_timeout: Duration::from_millis(settings.raft_write_timeout_ms),
        data_dir: settings.data_dir.clone(),
        purge_hold: Duration::from_secs(settings.raft_purge_hold_s),
        catalogue: catalogue.unwrap_or(EFFECT_CATALOGUE),
        group: 0,
        groups: settings.raft_groups,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_with_optional_addresses_and_mistakes_are_named() {
        let peers = parse_peers("1=a:7400/a:6632/a:9092, 2=b:7400").unwrap();
        assert_eq!(peers[&1], Member { raft: "a:7400".into(), http: "a:6632".into(), kafka: "a:9092".into() });
        assert_eq!(peers[&2], Member { raft: "b:7400".into(), ..Member::default() });
        assert_eq!(parse_peers("1=a,1=b"), Err(FoundingError::Twice(1)));
        assert_eq!(parse_peers("x=a"), Err(FoundingError::Entry("x=a".into())));
        assert_eq!(parse_peers("0=a"), Err(FoundingError::Entry("0=a".into())));
        assert_eq!(parse_peers("1="), Err(FoundingError::Entry("1=".into())));
        assert_eq!(parse_peers("1=a/b/c/d"), Err(FoundingError::Entry("1=a/b/c/d".into())));
    }
}
