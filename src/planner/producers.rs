//! Idempotent Kafka producers' state, expired: a producer silent in a
//! partition for `QUEEN_KAFKA_PRODUCER_ID_EXPIRATION_MS` (Kafka's
//! `producer.id.expiration.ms`, a day) is forgotten there, so the state
//! grows with the producers that write, not with every producer id a
//! partition ever saw. A forgotten producer's next batch is taken at any
//! sequence, as Kafka takes it (`push.rs`).

use super::effect::Effect;
use super::overlay::Overlay;
use crate::store::rows::FORGOTTEN;
use crate::store::Store;
use std::collections::BTreeMap;

/// Whether some producer has been silent for `expiry_us` at `now_us`.
pub fn any_expired(store: &Store, now_us: i64, expiry_us: i64) -> bool {
    store.producers.iter().any(|(key, row)| key.2 != FORGOTTEN && row.last_write_us.saturating_add(expiry_us) <= now_us)
}

/// One `ForgetProducers` per partition with producers silent for
/// `expiry_us`, judged on the state as the entries planned so far leave it.
pub fn plan_expire(store: &Store, overlay: &mut Overlay, now_us: i64, expiry_us: i64) -> Vec<Effect> {
    let mut gone: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
    for (key, _) in store.producers.iter().filter(|(key, _)| key.2 != FORGOTTEN) {
        let silent =
            overlay.producer(store, key).is_some_and(|row| row.last_write_us.saturating_add(expiry_us) <= now_us);
        if silent {
            gone.entry((key.0, key.1)).or_default().push(key.2);
        }
    }
    gone.into_iter()
        .map(|((queue, partition), producer_ids)| {
            for id in &producer_ids {
                overlay.put_producer((queue, partition, *id), None);
            }
            Effect::ForgetProducers { queue, partition, producer_ids }
        })
        .collect()
}
