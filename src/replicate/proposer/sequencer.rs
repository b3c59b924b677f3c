//! The proposer's thread: plans commands in small chunks and adds each to
//! the log store's open batch, which the syncer takes whole whenever it is
//! free.

use super::inbox::{self, Msg, Taken};
use super::plan_clock::PlanClock;
use crate::clock::Clock;
use crate::planner::command::Command;
use crate::planner::{Planned, Planner};
use crate::qlog::files::FileTable;
use crate::replicate::batch::LocalTicket;
use crate::replicate::batch::Reply;
use crate::replicate::log_store::open_batch::OpenBatch;
use crate::replicate::ProposeError;
use crate::store::Store;
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most commands planned under one hold of the store's lock and added
/// to the open batch at once: a syncer that comes free mid-burst takes what
/// is planned so far, not only once the whole burst is.
const PLAN_CHUNK: usize = 32;
/// How often idle logs are looked at for a file to seal by age, and for
/// the logs of deleted queues to let go of.
const TEND_IDLE_EVERY: Duration = Duration::from_secs(1);

pub(crate) struct Sequencer {
    pub planner: Planner,
    pub state: Arc<RwLock<Store>>,
    pub open: Arc<OpenBatch<LocalTicket>>,
    /// Asked before each chunk whether the writer can open its files.
    pub files: Arc<FileTable>,
    /// Where the plan's time comes from (`Clock::wall_us`).
    pub clock: Arc<dyn Clock>,
    /// The later stages, joined once they have drained.
    pub threads: Vec<JoinHandle<()>>,
}

impl Sequencer {
    pub fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut stamps = PlanClock::default();
        let mut stop = false;
        let mut tended_idle = Instant::now();
        while !stop {
            if tended_idle.elapsed() >= TEND_IDLE_EVERY {
                let store = self.state.read().expect("store lock");
                // A queue id below the next one and unknown to the store was
                // deleted; one planned and not applied yet is not below it.
                let deleted = |queue| queue < store.next_queue_id && store.queue_name(queue).is_none();
                self.open.tend_idle(deleted);
                drop(store);
                tended_idle = Instant::now();
            }
            let Some(Taken { mut commands, stop: asked_to_stop }) = inbox::take(&rx, TEND_IDLE_EVERY) else {
                continue;
            };
            stop = asked_to_stop;
            if !commands.is_empty() && !self.files.ready() {
                // Refused before they are planned, so they change nothing,
                // and what is already planned is written once files open.
                for (_, reply) in commands.drain(..) {
                    let _ = reply.send(Err(ProposeError::LogFilesUnavailable));
                }
            }
            let mut commands = commands.into_iter().peekable();
            while commands.peek().is_some() {
                let planned = self.plan(commands.by_ref().take(PLAN_CHUNK), &mut stamps);
                self.open.add(planned);
            }
        }
        // The syncer and then the applier drain what they hold and end.
        self.open.close();
        for t in self.threads {
            let _ = t.join();
        }
        tracing::info!("replicator stopped after a final checkpoint");
    }

    /// Plans a chunk under one hold of the store's lock, stamped with one
    /// time (`plan_clock.rs`).
    fn plan(
        &mut self,
        commands: impl Iterator<Item = (Command, Reply)>,
        stamps: &mut PlanClock,
    ) -> Vec<(Planned, Reply)> {
        let store = self.state.read().expect("store lock");
        let timestamp_us = stamps.stamp(self.clock.wall_us(), store.applied_us);
        self.planner.caught_up_with(&store);
        commands.map(|(command, reply)| (self.planner.plan(&store, command, timestamp_us), reply)).collect()
    }
}
