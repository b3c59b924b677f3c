//! The state machine's stage of the single node's pipeline: applies each
//! durable batch to the store, answers its commands, and counts, wakes and
//! checkpoints as the raft state machine does (`after_apply.rs`).

use super::after_apply::{AfterApply, AppliedBatch};
use crate::planner::apply::apply;
use crate::planner::command::{Answer, PushStatus};
use crate::replicate::batch::Batch;
use crate::replicate::batch::LocalTicket;
use crate::store::Store;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub(crate) struct Applier {
    pub state: Arc<RwLock<Store>>,
    pub after: AfterApply,
}

impl Applier {
    pub fn run(mut self, rx: mpsc::Receiver<Batch<LocalTicket>>) {
        loop {
            match rx.recv_timeout(self.after.due_in().max(Duration::from_millis(1))) {
                Ok(batch) => self.apply(batch),
                Err(RecvTimeoutError::Timeout) => self.after.tend(&self.state, false),
                Err(RecvTimeoutError::Disconnected) => {
                    self.after.finish(&self.state);
                    return;
                }
            }
        }
    }

    fn apply(&mut self, batch: Batch<LocalTicket>) {
        let entries = batch.items.iter().filter_map(|(p, _)| p.entry.as_ref());
        assert_eq!(
            entries.clone().count(),
            batch.locations.len(),
            "invariant broken: a durable batch's entries and the locations the log store gave them differ in number"
        );
        let mut count = 0;
        let applied_index = {
            let mut store = self.state.write().expect("store lock");
            for (entry, locs) in entries.zip(&batch.locations) {
                apply(&mut store, entry, locs);
                count += 1;
            }
            store.applied.index
        };
        let queues =
            batch.items.iter().flat_map(|(p, _)| p.entry.iter().flat_map(|e| &e.messages)).map(|m| m.span.queue);
        let applied =
            AppliedBatch { entries: count, bytes: batch.bytes, applied_index, started: Some(batch.started), queues };
        self.after.batch(&self.state, applied);
        let metrics = &self.after.metrics;
        for (p, reply) in batch.items {
            if let Answer::Pushed(outcomes) = &p.answer {
                let counted = |status| outcomes.iter().filter(|o| o.status == status).count() as u64;
                metrics.messages_appended.inc_by(counted(PushStatus::Queued));
                metrics.duplicates.inc_by(counted(PushStatus::Duplicate));
            }
            let _ = reply.send(Ok(p.answer));
        }
    }
}
