//! The proposer's thread: plans commands in small chunks and adds each to
//! the log store's open batch, which the syncer takes whole whenever it is
//! free.

use super::Msg;
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

/// The most messages taken from the inbox at once.
const MAX_CHUNK: usize = 8192;
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
    /// The later stages, joined once they have drained.
    pub threads: Vec<JoinHandle<()>>,
}

impl Sequencer {
    pub fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut last_ts = 0i64;
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
            let first = match rx.recv_timeout(TEND_IDLE_EVERY) {
                Ok(msg) => msg,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => Msg::Stop,
            };
            let mut inbox = vec![first];
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
                    Msg::Stop => stop = true,
                }
            }
            if !commands.is_empty() && !self.files.ready() {
                // Refused before they are planned, so they change nothing,
                // and what is already planned is written once files open.
                for (_, reply) in commands.drain(..) {
                    let _ = reply.send(Err(ProposeError::LogFilesUnavailable));
                }
            }
            let mut commands = commands.into_iter().peekable();
            while commands.peek().is_some() {
                // The planner's clock moves forward with every chunk, so what
                // is planned later is always later than what is applied.
                last_ts = (last_ts + 1).max(chrono::Utc::now().timestamp_micros());
                let planned = self.plan(commands.by_ref().take(PLAN_CHUNK), last_ts);
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

    fn plan(&mut self, commands: impl Iterator<Item = (Command, Reply)>, timestamp_us: i64) -> Vec<(Planned, Reply)> {
        let store = self.state.read().expect("store lock");
        self.planner.caught_up_with(&store);
        commands.map(|(command, reply)| (self.planner.plan(&store, command, timestamp_us), reply)).collect()
    }
}
