//! Planning queue configuration and deletion.

use super::command::ConfigureQueue;
use super::effect::Effect;
use super::overlay::Overlay;
use super::queue_options::{self, QueueOptions};
use crate::store::Store;
use serde_json::Value;

/// Creates the queue or replaces its settings; options not given keep their
/// current value (or the default, for a new queue).
pub fn plan_configure(store: &Store, overlay: &mut Overlay, cmd: &ConfigureQueue) -> (Vec<Effect>, u64, Value) {
    // A queue an unapplied batch deleted is configured anew, under a new id.
    let current = store
        .queues
        .get(&cmd.queue)
        .filter(|r| !overlay.is_deleted(r.id))
        .map(|r| (r.id, QueueOptions::parse(&r.options)));
    let (id, base) = match current {
        Some((id, options)) => match options.as_json() {
            Value::Object(m) => (id, m),
            _ => (id, queue_options::defaults()),
        },
        None => (
            overlay.queue_id(store, &cmd.queue).unwrap_or_else(|| overlay.create_queue(store, &cmd.queue)),
            queue_options::defaults(),
        ),
    };
    let options = Value::Object(queue_options::merge(base, &cmd.options));
    let effect = Effect::ConfigureQueue {
        id,
        name: cmd.queue.clone(),
        namespace: cmd.namespace.clone(),
        task: cmd.task.clone(),
        options: options.to_string(),
    };
    (vec![effect], id, options)
}

/// Deletes the queue, as the batches planned so far leave it: one created
/// by an unapplied batch goes too, and later commands no longer find it.
pub fn plan_delete(store: &Store, overlay: &mut Overlay, queue: &str) -> Vec<Effect> {
    let Some(id) = overlay.queue_id(store, queue) else { return vec![] };
    overlay.delete_queue(queue, id);
    vec![Effect::DeleteQueue { id }]
}
