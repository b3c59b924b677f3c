//! The pipeline's first stage: plans commands into the open batch, stages
//! their records in the qlog writer, and hands the batch to the syncer as
//! soon as it is free.

use super::{Batch, Msg, Reply};
use crate::planner::command::Command;
use crate::planner::Planner;
use crate::qlog::writer::{EntryWrite, QlogWriter};
use crate::store::Store;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

/// The most messages taken from the inbox at once.
const MAX_CHUNK: usize = 8192;
/// The most commands planned under one hold of the store's lock, and between
/// two looks at whether the syncer is free.
const PLAN_CHUNK: usize = 32;
/// The most commands one group commit takes: a batch this full goes to the
/// syncer even while it is busy, so a slow disk cannot grow one batch (and
/// the applier's hold of the store's lock) without bound.
const MAX_BATCH: usize = 16384;

pub(super) struct Sequencer {
    pub planner: Planner,
    pub writer: QlogWriter,
    pub state: Arc<RwLock<Store>>,
    pub applied_batch: Arc<AtomicU64>,
    /// Set by the syncer when it finished its batch, cleared here when it is
    /// handed the next.
    pub syncer_free: Arc<AtomicBool>,
    pub to_syncer: mpsc::Sender<Batch>,
    /// The later stages, joined once they have drained.
    pub threads: Vec<JoinHandle<()>>,
}

impl Sequencer {
    pub fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut open: Option<Batch> = None;
        let mut next_number = 1;
        let mut last_ts = 0i64;
        let mut stop = false;
        while !stop {
            let mut inbox = vec![rx.recv().unwrap_or(Msg::Stop)];
            while inbox.len() < MAX_CHUNK {
                match rx.try_recv() {
                    Ok(msg) => inbox.push(msg),
                    Err(_) => break,
                }
            }
            let mut commands = Vec::with_capacity(inbox.len());
            for msg in inbox {
                match msg {
                    Msg::Propose(c, r) => commands.push((c, r)),
                    // Only a wake-up: the flag says whether the syncer is free.
                    Msg::Synced => {}
                    Msg::Stop => stop = true,
                }
            }
            let mut commands = commands.into_iter().peekable();
            while commands.peek().is_some() {
                // The planner's clock moves forward with every chunk, so what
                // is planned later is always later than what is applied.
                last_ts = (last_ts + 1).max(chrono::Utc::now().timestamp_micros());
                let batch = open.get_or_insert_with(|| {
                    next_number += 1;
                    Batch::new(next_number - 1)
                });
                self.plan(batch, commands.by_ref().take(PLAN_CHUNK), last_ts);
                stop |= !self.hand_off(&mut open, false);
            }
            stop |= !self.hand_off(&mut open, stop);
        }
        // The syncer and then the applier drain what they hold and end.
        drop(self.to_syncer);
        for t in self.threads {
            let _ = t.join();
        }
        tracing::info!("replicator stopped after a final checkpoint");
    }

    /// Hands the open batch to the syncer when it is free, when the batch is
    /// full, or when `now`. Checked between small chunks of planning, so a
    /// syncer that comes free mid-burst waits for one chunk at most, not for
    /// the planning of the whole burst. Answers false once the syncer is gone.
    fn hand_off(&mut self, open: &mut Option<Batch>, now: bool) -> bool {
        let full = open.as_ref().is_some_and(|b| b.planned.len() >= MAX_BATCH);
        if !(now || full || self.syncer_free.load(Ordering::Acquire)) {
            return true;
        }
        let Some(mut batch) = open.take() else { return true };
        batch.pending = self.writer.take_pending();
        self.syncer_free.store(false, Ordering::Release);
        self.to_syncer.send(batch).is_ok()
    }

    fn plan(&mut self, batch: &mut Batch, commands: impl Iterator<Item = (Command, Reply)>, timestamp_us: i64) {
        let first = batch.planned.len();
        {
            let store = self.state.read().expect("store lock");
            // Read under the lock, so the overlay keeps exactly what the
            // store does not hold yet.
            self.planner.batches_applied(self.applied_batch.load(Ordering::Acquire));
            self.planner.open_batch(batch.number);
            for (command, reply) in commands {
                batch.planned.push((self.planner.plan(&store, command, timestamp_us), reply));
            }
        }
        for (planned, _) in &batch.planned[first..] {
            if let Some(e) = &planned.entry {
                let write =
                    EntryWrite { id: e.id, effects: e.body.encode(), queues: e.queues(), messages: &e.messages };
                batch.locations.push(self.writer.stage(&write));
            }
        }
    }
}
