//! A stage of a replicator's pipeline: a named thread whose panic ends the
//! process, used by the single node's pipeline and by the raft replicator.

use crate::fatal;
use std::thread::JoinHandle;

/// Starts one stage. A stage that panics ends the process with a FATAL
/// line: the others would wait for it forever, and a panic in apply means
/// the store no longer matches the log, which only a boot can repair.
pub fn spawn(name: &'static str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    let stage = move || {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            fatal::exit(&format!("the replicator's {name} thread panicked ({why}); the log decides at the next boot"));
        }
    };
    std::thread::Builder::new()
        .name(name.into())
        .spawn(stage)
        .unwrap_or_else(|e| panic!("spawn the {name} thread: {e}"))
}
