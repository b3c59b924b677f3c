//! Waking the readers that wait for what apply changes: any apply (an HTTP
//! pop may find a partition freed by an ack), or an append to particular
//! queues. A Kafka fetch long-polls a few partitions; woken by every write
//! anywhere, each idle consumer re-read its partitions once per group commit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

/// Every this many watches, queues whose readers all gave up are forgotten,
/// so queues deleted while watched do not stay in the map.
const SWEEP_EVERY: u64 = 4096;

#[derive(Default)]
pub struct ApplyWatch {
    any: Notify,
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    by_queue: HashMap<u64, Vec<Weak<Notify>>>,
    watches: u64,
}

impl ApplyWatch {
    /// Resolves at the next apply of anything; enabled, it catches an apply
    /// that lands before it is awaited.
    pub fn applied(&self) -> Notified<'_> {
        self.any.notified()
    }

    /// A signal that fires at the first append to any of `queues` applied
    /// after this call, even one that lands before the caller awaits it.
    pub fn watch(&self, queues: impl IntoIterator<Item = u64>) -> Arc<Notify> {
        let signal = Arc::new(Notify::new());
        let mut waiting = self.waiting.lock().expect("append watch lock");
        waiting.watches += 1;
        if waiting.watches.is_multiple_of(SWEEP_EVERY) {
            waiting.by_queue.retain(|_, readers| {
                readers.retain(|r| r.strong_count() > 0);
                !readers.is_empty()
            });
        }
        for queue in queues {
            let readers = waiting.by_queue.entry(queue).or_default();
            // Readers that gave up are dropped here, so a queue that sees no
            // appends does not collect them.
            readers.retain(|r| r.strong_count() > 0);
            readers.push(Arc::downgrade(&signal));
        }
        signal
    }

    /// Wakes the readers of any apply, and those watching one of `queues`,
    /// the queues the batch appended to.
    pub fn batch_applied(&self, queues: impl IntoIterator<Item = u64>) {
        self.any.notify_waiters();
        let mut waiting = self.waiting.lock().expect("append watch lock");
        for queue in queues {
            for reader in waiting.by_queue.remove(&queue).into_iter().flatten() {
                if let Some(signal) = reader.upgrade() {
                    // Stores a permit when the reader is not awaiting yet.
                    signal.notify_one();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn fires(signal: &Notify) -> bool {
        tokio::time::timeout(Duration::from_millis(50), signal.notified()).await.is_ok()
    }

    #[tokio::test]
    async fn a_reader_wakes_for_its_queues_only_and_keeps_an_early_append() {
        let watch = ApplyWatch::default();
        let a = watch.watch([1, 2]);
        let b = watch.watch([3]);
        // Lands before either reader awaits.
        watch.batch_applied([2]);
        assert!(fires(&a).await);
        assert!(!fires(&b).await, "an append to another queue woke the reader");
        watch.batch_applied([3]);
        assert!(fires(&b).await);
    }

    #[test]
    fn readers_that_gave_up_are_not_kept() {
        let watch = ApplyWatch::default();
        for _ in 0..100 {
            drop(watch.watch([7]));
        }
        let _live = watch.watch([7]);
        assert_eq!(watch.waiting.lock().unwrap().by_queue[&7].len(), 1);
        // A queue no reader watches any more is forgotten by the next sweep.
        drop(watch.watch([8]));
        for _ in 0..SWEEP_EVERY {
            drop(watch.watch([9]));
        }
        assert!(!watch.waiting.lock().unwrap().by_queue.contains_key(&8));
    }
}
