//! Share groups as rows: each is a row of the internal KV namespace
//! `queen-share-groups` holding its configs (`planner/share_config.rs`),
//! and the row is what makes the group's pops take records one by one. A
//! group becomes a share group at a Kafka share member's first heartbeat,
//! at an HTTP pop that asks `shared=true`, or when its configs are set.
//! Both front ends go through here.

use crate::internal_kv::SHARE_GROUPS;
use crate::node::Node;
use crate::planner::kv::{row_key, Expiry, KvAnswer, KvKind, KvOp, KvResult};
use crate::planner::share_config::{refusal, DEFAULTS};
use crate::replicate::raft::version_gate::cluster_catalogue;
use crate::replicate::typed::Typed;
use crate::replicate::ProposeError;
use crate::store::Store;
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum ShareGroupError {
    #[error("{0}")]
    Invalid(String),
    /// A cluster writes share group effects only once every member reads
    /// them (effect catalogue 4).
    #[error("share groups wait until every cluster member runs a build that reads them (effect catalogue 4)")]
    NotYet,
    /// A share group's configs and declaration live in group 0's KV, which
    /// the raft groups holding the queues do not read.
    #[error("share groups are not served with QUEEN_RAFT_GROUPS above 1 by this build")]
    GroupsApart,
    #[error(transparent)]
    Propose(#[from] ProposeError),
}

/// The group's row, if it is a share group.
pub fn row(store: &Store, group: &str) -> Option<Map<String, Value>> {
    let row = store.kv.get(&row_key(SHARE_GROUPS, group))?;
    Some(serde_json::from_str(&row.value).unwrap_or_default())
}

/// The group's configs as Kafka names them, each with whether it was set
/// (else it is the default); `None` when it is not a share group.
pub fn configs(store: &Store, group: &str) -> Option<Vec<(String, String, bool)>> {
    let row = row(store, group)?;
    let entries = DEFAULTS
        .iter()
        .map(|(name, default)| match row.get(*name).and_then(Value::as_str) {
            Some(v) => (name.to_string(), v.to_string(), true),
            None => (name.to_string(), default.to_string(), false),
        })
        .collect();
    Some(entries)
}

/// Every share group's id, in order.
pub fn names(store: &Store) -> Vec<String> {
    let prefix = row_key(SHARE_GROUPS, "");
    store
        .kv
        .range(prefix.clone()..)
        .map(|(k, _)| k)
        .take_while(|k| k.starts_with(&prefix))
        .map(|k| k[prefix.len()..].to_string())
        .collect()
}

fn refuse_groups_apart(node: &Node) -> Result<(), ShareGroupError> {
    match node.placed_apart() {
        true => Err(ShareGroupError::GroupsApart),
        false => Ok(()),
    }
}

fn refuse_before_catalogue_4(node: &Node) -> Result<(), ShareGroupError> {
    match node.settings.raft_node_id.is_none() || cluster_catalogue(&node.group0().view.local()) >= 4 {
        true => Ok(()),
        false => Err(ShareGroupError::NotYet),
    }
}

async fn write(node: &Node, group: &str, row: &Map<String, Value>) -> Result<(), ShareGroupError> {
    let op = KvOp {
        ns: SHARE_GROUPS.to_string(),
        kind: KvKind::Put {
            key: group.to_string(),
            value: Value::Object(row.clone()).to_string(),
            expiry: Expiry::Forever,
            expect: None,
        },
        required: true,
    };
    match node.group0().replicator.ask(Typed::kv(vec![op])).await? {
        KvAnswer::Results(results) if matches!(results.first(), Some(KvResult::Write { applied: Ok(()), .. })) => {
            Ok(())
        }
        other => Err(ShareGroupError::Invalid(format!("writing share group {group}'s row answered {other:?}"))),
    }
}

/// Makes `group` a share group, if it is not one already.
pub async fn declare(node: &Node, group: &str) -> Result<(), ShareGroupError> {
    refuse_groups_apart(node)?;
    if row(&node.group0().view.local(), group).is_some() {
        return Ok(());
    }
    refuse_before_catalogue_4(node)?;
    write(node, group, &Map::new()).await
}

/// Makes `group` an ordinary group again: its row and configs go.
pub async fn forget(node: &Node, group: &str) -> Result<(), ShareGroupError> {
    if row(&node.group0().view.local(), group).is_none() {
        return Ok(());
    }
    let op = KvOp {
        ns: SHARE_GROUPS.to_string(),
        kind: KvKind::Delete { key: group.to_string(), expect: None },
        required: false,
    };
    node.group0().replicator.ask(Typed::kv(vec![op])).await?;
    Ok(())
}

/// Sets (`Some`) or resets (`None`) configs of `group`, making it a share
/// group; every value is checked before any is set.
pub async fn set(
    node: &Node,
    group: &str,
    settings: &[(String, Option<String>)],
    validate_only: bool,
) -> Result<(), ShareGroupError> {
    let mut row = row(&node.group0().view.local(), group).unwrap_or_default();
    for (name, value) in settings {
        match value {
            Some(v) => {
                if let Some(why) = refusal(name, v) {
                    return Err(ShareGroupError::Invalid(why));
                }
                row.insert(name.clone(), Value::String(v.clone()));
            }
            None => {
                if let Some(why) = refusal(name, DEFAULTS.iter().find(|(n, _)| n == name).map_or("?", |d| d.1)) {
                    return Err(ShareGroupError::Invalid(why));
                }
                row.remove(name);
            }
        }
    }
    if validate_only {
        return Ok(());
    }
    refuse_groups_apart(node)?;
    refuse_before_catalogue_4(node)?;
    write(node, group, &row).await
}
