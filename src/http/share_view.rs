//! A share group as the consumer-group view shows it: on each partition the
//! records its members hold now (whose lock ends when, at which delivery)
//! and those waiting to be delivered again after a failed delivery; and its
//! members, Kafka share consumers from the listener's memory (on the node
//! that coordinates the group) and HTTP pops by the lease that holds records.

use super::ids::iso_time;
use crate::node::Node;
use crate::store::{CursorKey, Store};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// At most this many records are listed per partition and list; the counts
/// beside the lists cover all of them.
const LISTED: usize = 100;

/// The share-group fields of one partition's view.
pub fn partition(store: &Store, key: &CursorKey, now_us: i64) -> Value {
    let deliveries = |offset: &u64| store.cursors.get(key).and_then(|c| c.failures.get(offset)).copied().unwrap_or(0);
    let holds = store.shares.get(key).map(|row| &row.held);
    let held: Vec<Value> = holds
        .into_iter()
        .flatten()
        .filter(|(_, hold)| hold.expires_us > now_us)
        .map(|(offset, hold)| {
            json!({
                "offset": offset,
                "holder": hold.holder,
                "lockExpiresAt": iso_time(hold.expires_us),
                // Delivery n follows n - 1 failed ones (planner/share.rs).
                "deliveryCount": deliveries(offset) + 1,
            })
        })
        .collect();
    let is_held = |offset: &u64| holds.and_then(|h| h.get(offset)).is_some_and(|hold| hold.expires_us > now_us);
    let again: Vec<Value> = store
        .cursors
        .get(key)
        .into_iter()
        .flat_map(|c| c.failures.keys())
        .filter(|offset| !is_held(offset))
        .map(|offset| json!({"offset": offset, "deliveries": deliveries(offset)}))
        .collect();
    json!({
        "inFlightCount": held.len(),
        "inFlight": held.iter().take(LISTED).collect::<Vec<_>>(),
        "redeliveryCount": again.len(),
        "redelivery": again.iter().take(LISTED).collect::<Vec<_>>(),
    })
}

/// The group's members with how many records each holds now: the Kafka
/// share consumers this node coordinates, then every other holder (an HTTP
/// pop's lease, or a Kafka member another node coordinates).
pub fn members(node: &Node, store: &Store, group: &str, now_us: i64) -> Vec<Value> {
    let mut holding: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, row) in store.shares.iter().filter(|(key, _)| key.2 == group) {
        for hold in row.held.values().filter(|hold| hold.expires_us > now_us) {
            *holding.entry(hold.holder.as_str()).or_default() += 1;
        }
    }
    let kafka = node.kafka_share_members.get().and_then(|members| members.describe(group));
    let mut out = Vec::new();
    for (id, member) in kafka.map(|(_, members)| members).unwrap_or_default() {
        out.push(json!({
            "memberId": id,
            "kind": "kafka",
            "clientId": member.client_id,
            "clientHost": member.client_host,
            "partitions": member.assignment.values().map(Vec::len).sum::<usize>(),
            "inFlight": holding.remove(id.as_str()).unwrap_or(0),
        }));
    }
    for (holder, count) in holding {
        out.push(json!({"memberId": holder, "kind": "holder", "inFlight": count}));
    }
    out
}
