//! Planning queue configuration and deletion.

use super::effect::Effect;
use super::items::ConfigureQueue;
use super::overlay::Overlay;
use crate::queue_options::{self, QueueOptions};
use crate::store::Store;
use serde_json::Value;

/// Creates the queue or replaces its settings; options not given keep their
/// current value (or the default, for a new queue).
pub fn plan_configure(store: &Store, overlay: &mut Overlay, cmd: &ConfigureQueue) -> (Vec<Effect>, u64, Value) {
    // Options as the batches planned so far leave them: a queue configured
    // by an unapplied batch keeps what that batch set, and one it deleted is
    // configured anew, under a new id.
    let (id, current) = match overlay.queue_id(store, &cmd.queue) {
        Some(id) => (id, overlay.queue_options(store, id)),
        None => (overlay.create_queue(store, &cmd.queue), None),
    };
    let base = match current.map(|o| QueueOptions::parse(&o).as_json()) {
        Some(Value::Object(m)) => m,
        _ => queue_options::defaults(),
    };
    let options = Value::Object(queue_options::merge(base, &cmd.options));
    overlay.set_queue_options(id, options.to_string());
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
