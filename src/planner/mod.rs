//! The planner: the only place that decides. A command is checked against the
//! current state (the store plus what the batch in flight has decided) and
//! becomes one entry of deterministic effects.

pub mod apply;
pub mod command;
pub mod effect;
pub mod overlay;
pub mod push;
pub mod txn;

use crate::log_id::LogId;
use crate::store::Store;
use command::{Answer, Command};
use effect::{Entry, EntryBody};
use overlay::Overlay;

pub struct Planner {
    term: u64,
    next_index: u64,
    overlay: Overlay,
}

/// A planned command: the entry to write (none when it changes nothing) and
/// the answer to give once the batch it belongs to is durable and applied.
pub struct Planned {
    pub entry: Option<Entry>,
    pub answer: Answer,
}

impl Planner {
    /// A planner whose next entry follows `last`.
    pub fn new(term: u64, last: LogId) -> Self {
        Self { term, next_index: last.index + 1, overlay: Overlay::default() }
    }

    pub fn plan(&mut self, store: &Store, command: Command, timestamp_us: i64) -> Planned {
        let id = LogId::new(self.term, self.next_index);
        let (effects, messages, answer) = match command {
            Command::Push(items) => {
                let p = push::plan_push(store, &mut self.overlay, id, timestamp_us, items);
                (p.effects, p.messages, Answer::Pushed(p.outcomes))
            }
        };
        if effects.is_empty() {
            return Planned { entry: None, answer };
        }
        self.next_index += 1;
        Planned { entry: Some(Entry { id, body: EntryBody { timestamp_us, effects }, messages }), answer }
    }

    /// The batch in flight is applied: the store now holds what the overlay did.
    pub fn batch_applied(&mut self) {
        self.overlay.clear();
    }
}
