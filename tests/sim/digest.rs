//! A store's rows as text, for comparing two stores: the single-node
//! simulator's recovered store against its reference run, and the cluster
//! simulator's nodes against each other.

use queen::seams::store::Store;

/// The store's rows as text, keyspace by keyspace, for comparing two stores.
pub fn digest(store: &Store) -> Vec<String> {
    let mut out = vec![format!(
        "applied {} led by {} next queue {} next partition {} next kv {}",
        store.applied, store.applied_leader, store.next_queue_id, store.next_partition_id, store.next_kv_version
    )];
    out.extend(store.membership.iter().map(|(k, v)| format!("membership {k:?} {v:?}")));
    out.extend(store.queues.iter().map(|(k, v)| format!("queue {k:?} {v:?}")));
    out.extend(store.partitions.iter().map(|(k, v)| format!("partition {k:?} {v:?}")));
    out.extend(store.cursors.iter().map(|(k, v)| format!("cursor {k:?} {v:?}")));
    out.extend(store.shares.iter().map(|(k, v)| format!("share {k:?} {v:?}")));
    out.extend(store.groups.iter().map(|(k, v)| format!("group {k:?} {v:?}")));
    out.extend(store.dlq.iter().map(|(k, v)| format!("dlq {k:?} {v:?}")));
    out.extend(store.kv.iter().map(|(k, v)| format!("kv {k:?} {v:?}")));
    out.extend(store.commit_metadata.iter().map(|(k, v)| format!("commit metadata {k:?} {v:?}")));
    out.extend(store.timers_from("", None).map(|(k, v)| format!("timer {k:?} {v:?}")));
    out.extend(store.dedup.rows().into_iter().map(|(p, offset, hash)| format!("dedup {p:?}@{offset} {hash:?}")));
    out.extend(store.producers.iter().map(|(k, v)| format!("producer {k:?} {v:?}")));
    out.extend(store.kafka_txns().map(|(k, v)| format!("kafka txn {k:?} {v:?}")));
    out.extend(store.aborted_txns.iter().map(|(k, v)| format!("aborted txn {k:?} {v:?}")));
    for ((q, p), row) in store.partitions.iter() {
        let hidden = (0..row.next_offset).filter(|o| store.is_kafka_hidden(*q, *p, *o));
        out.extend(hidden.map(|o| format!("hidden {q}/{p}@{o}")));
    }
    out
}
