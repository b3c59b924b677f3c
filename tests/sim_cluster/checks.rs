//! The checks of a settled cluster, node by node and group by group: every
//! committed entry after its purge point is in its log at its index, its
//! store applied through the same index as
//! every other node's and equal to theirs, every answered push reads back at
//! its offset, outside any Kafka transaction's hidden offsets, every
//! partition's offsets run without a gap (a Kafka transaction's marker
//! filling its own) and hold no transactionId twice, every Kafka
//! transaction's records are what its end made them (`kafka_txns.rs`), and
//! every KV key holds what its writes allow, and the share group's records
//! are what its members' answers allow (`shares.rs`).

use super::digest::digest;
use super::kv_history::KV_NS;
use super::node::Up;
use super::workload::Model;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::RaftLogReader;
use queen::seams::message::Message;
use queen::seams::planner::row_key;
use queen::seams::qlog::FileTable;
use queen::seams::qlog::{MessageRecord, Piece};
use queen::seams::raft::RaftLogId;
use queen::seams::store::Store;
use std::collections::{BTreeMap, HashMap};

/// The transactionId and value at an offset, read through the locator and
/// the qlog as a reader does; or why it cannot be read.
fn read(store: &Store, files: &FileTable, q: u64, p: u64, offset: u64) -> Result<(String, Vec<u8>), String> {
    let span =
        *store.locator.spans_from(q, p, offset).first().ok_or_else(|| format!("no span from offset {offset}"))?;
    if span.first_offset > offset || span.end() <= offset {
        return Err(format!("the span from {offset} is {span:?}"));
    }
    let body = files.read_body(span.at).map_err(|e| format!("{span:?}: {e}"))?;
    let record = MessageRecord::decode(&body).map_err(|e| e.to_string())?;
    let Some((_, Piece::Message(payload))) = record.piece_at(offset) else {
        return Err(format!("offset {offset} of {span:?} holds no message stored one by one"));
    };
    let message = Message::decode(&payload.raw().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    Ok((message.transaction_id.clone(), message.value_bytes().to_vec()))
}

/// What a node's log holds: from the first index it keeps (after its purge
/// point), the log id at each index.
pub type Held = (u64, BTreeMap<u64, RaftLogId>);

/// The log ids node `up`'s log holds through `last`.
pub async fn held(up: &Up, last: Option<u64>) -> Result<Held, String> {
    let purged = up.raft().metrics().borrow_watched().purged;
    let from = purged.map_or(0, |p| p.index + 1);
    let Some(last) = last.filter(|l| *l >= from) else { return Ok((from, BTreeMap::new())) };
    let held = up.log.clone().try_get_log_entries(from..=last).await.map_err(|e| e.to_string())?;
    Ok((from, held.iter().map(|e| (e.log_id.index, e.log_id)).collect()))
}

/// Checks node `id`'s log of one group, which holds `held`, against the
/// entries that group committed; answers what broke.
pub fn log(id: u64, held: Result<Held, String>, committed: &BTreeMap<u64, RaftLogId>) -> Vec<String> {
    let mut broke = Vec::new();
    match held {
        Ok((from, held)) => {
            for (index, id_there) in committed.range(from..) {
                if held.get(index) != Some(id_there) {
                    broke.push(format!(
                        "node {id}: committed entry {id_there} is lost: its log holds {:?} at index {index}",
                        held.get(index).map(ToString::to_string)
                    ));
                    break;
                }
            }
        }
        Err(e) => broke.push(format!("node {id}: its log does not read back: {e}")),
    }
    broke
}

/// Checks node `id`'s data: `groups` are its raft groups, group 0 first,
/// and `placed(queue)` the index of the one holding `queue`; answers what
/// broke.
pub fn data(id: u64, groups: &[&Up], placed: impl Fn(&str) -> usize, model: &Model) -> Vec<String> {
    let mut broke = Vec::new();
    for ((queue, partition, txn), (offset, value)) in &model.acked {
        let up = groups[placed(queue)];
        let store = up.store.read().expect("store lock");
        let at = store.queue_id(queue).and_then(|q| Some((q, store.partition_id(q, partition)?)));
        let Some((q, p)) = at else {
            broke.push(format!("node {id}: partition {queue}/{partition} of an answered push is gone"));
            continue;
        };
        match read(&store, &up.files, q, p, *offset) {
            Ok((t, v)) if t == *txn && v == *value => {}
            found => broke.push(format!(
                "node {id}: the push {txn} answered at {queue}/{partition}@{offset} reads back as {found:?}"
            )),
        }
        if store.is_kafka_hidden(q, p, *offset) {
            broke.push(format!(
                "node {id}: the push {txn} at {queue}/{partition}@{offset}, in no transaction, is hidden"
            ));
        }
    }
    {
        let (up, store) = (groups[0], groups[0].store.read().expect("store lock"));
        broke.extend(super::kafka_txns::check(id, &store, &model.txns, |q, p, offset| {
            read(&store, &up.files, q, p, offset)
        }));
        broke.extend(super::shares::check(id, &store, &model.shares));
    }
    for up in groups {
        let store = up.store.read().expect("store lock");
        for ((q, p), row) in store.partitions.iter() {
            let mut seen = HashMap::new();
            for offset in 0..row.next_offset {
                match read(&store, &up.files, *q, *p, offset) {
                    Ok((txn, _)) => {
                        if let Some(first) = seen.insert(txn.clone(), offset) {
                            broke.push(format!(
                                "node {id}: transactionId {txn} is stored twice in {q}/{p}: offsets {first} and {offset}"
                            ));
                        }
                    }
                    // A transaction's marker: a control batch, hidden from HTTP readers.
                    Err(_) if store.is_kafka_hidden(*q, *p, offset) => {}
                    Err(why) => broke.push(format!("node {id}: partition {q}/{p} has a gap at offset {offset}: {why}")),
                }
            }
        }
    }
    broke
}

/// The KV rows of the workload's namespace that node `up` holds: key → value.
pub fn kv_rows(up: &Up) -> BTreeMap<String, String> {
    let store = up.store.read().expect("store lock");
    let from = row_key(KV_NS, "");
    let rows = store.kv.range(from.clone()..).take_while(|(k, _)| k.starts_with(&from));
    rows.map(|(k, row)| (k[from.len()..].to_string(), row.value.clone())).collect()
}

/// The stores of nodes at the same applied index are equal: answers what
/// differs, naming the first row.
pub fn equal_stores(ups: &BTreeMap<u64, &Up>) -> Vec<String> {
    let mut by_index: BTreeMap<u64, (u64, Vec<String>)> = BTreeMap::new();
    let mut broke = Vec::new();
    for (id, up) in ups {
        let store = up.store.read().expect("store lock");
        let rows = digest(&store);
        match by_index.get(&store.applied.index) {
            Some((first, want)) if *want != rows => {
                let at = rows.iter().zip(want).position(|(a, b)| a != b).unwrap_or(rows.len().min(want.len()));
                broke.push(format!(
                    "nodes {first} and {id} applied through {} and their stores differ: {:?} against {:?}",
                    store.applied,
                    want.get(at),
                    rows.get(at)
                ));
            }
            Some(_) => {}
            None => {
                by_index.insert(store.applied.index, (*id, rows));
            }
        }
    }
    broke
}
