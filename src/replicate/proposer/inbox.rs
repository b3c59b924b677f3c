//! The proposer's inbox, on one node and under raft alike: commands arrive
//! on a channel and are taken in chunks, every message waiting at once, so
//! that a burst is planned together.

use crate::planner::command::Command;
use crate::replicate::batch::Reply;
use std::sync::mpsc;
use std::time::Duration;

/// The most messages taken from the inbox at once.
const MAX_CHUNK: usize = 8192;

/// What reaches the proposer's thread.
pub(crate) enum Msg {
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
    let mut taken = Taken { commands: Vec::new(), stop: false };
    for msg in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())).take(MAX_CHUNK) {
        match msg {
            Msg::Propose(command, reply) => taken.commands.push((command, reply)),
            Msg::Stop => taken.stop = true,
        }
    }
    Some(taken)
}
