//! The proposer's inbox, on one node and under raft alike: commands arrive
//! on a channel and are taken in chunks, every message waiting at once, so
//! that a burst is planned together. The single node's sequencer is a
//! thread and waits on a thread's channel; the raft proposer is a task and
//! awaits a tokio one. Both take their chunks by one rule (`gather`).

use crate::planner::command::Command;
use crate::replicate::batch::Reply;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::mpsc as tokio_mpsc;

/// The most messages taken from the inbox at once.
const MAX_CHUNK: usize = 8192;

/// What reaches the proposer.
pub enum Msg {
    Propose(Command, Reply),
    Stop,
}

/// What one look at the inbox took: the commands, in arrival order, and
/// whether the proposer is to stop after them (asked to, or every sender
/// is gone).
pub(crate) struct Taken {
    pub commands: Vec<(Command, Reply)>,
    pub stop: bool,
}

/// Waits up to `idle` for a message, then takes every other one waiting,
/// up to a chunk; `None` when nothing came within `idle`.
pub(crate) fn take(rx: &mpsc::Receiver<Msg>, idle: Duration) -> Option<Taken> {
    let first = match rx.recv_timeout(idle) {
        Ok(msg) => msg,
        Err(mpsc::RecvTimeoutError::Timeout) => return None,
        Err(mpsc::RecvTimeoutError::Disconnected) => Msg::Stop,
    };
    Some(gather(first, || rx.try_recv().ok()))
}

/// Awaits a message, then takes every other one waiting, up to a chunk.
pub(crate) async fn take_async(rx: &mut tokio_mpsc::UnboundedReceiver<Msg>) -> Taken {
    let first = rx.recv().await.unwrap_or(Msg::Stop);
    gather(first, || rx.try_recv().ok())
}

/// The chunk that starts with `first` and goes on with what `more` finds
/// waiting.
fn gather(first: Msg, more: impl FnMut() -> Option<Msg>) -> Taken {
    let mut taken = Taken { commands: Vec::new(), stop: false };
    for msg in std::iter::once(first).chain(std::iter::from_fn(more)).take(MAX_CHUNK) {
        match msg {
            Msg::Propose(command, reply) => taken.commands.push((command, reply)),
            Msg::Stop => taken.stop = true,
        }
    }
    taken
}
