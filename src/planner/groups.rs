//! Planning consumer-group administration: seek, delete, re-subscribe.

use super::command::SeekTo;
use super::cursor;
use super::effect::Effect;
use super::overlay::Overlay;
use crate::store::rows::{CursorRow, GroupRow};
use crate::store::Store;

/// The queues (id) a group has a cursor or a subscription on, but for those
/// an unapplied batch deletes.
fn queues_of(store: &Store, overlay: &Overlay, group: &str) -> Vec<u64> {
    let mut out: Vec<u64> = store
        .cursors
        .iter()
        .filter(|(k, _)| k.2 == group)
        .map(|(k, _)| k.0)
        .chain(store.groups.iter().filter(|(k, _)| k.1 == group).map(|(k, _)| k.0))
        .collect();
    out.sort_unstable();
    out.dedup();
    out.retain(|q| !overlay.is_deleted(*q));
    out
}

/// Moves the group's cursor on every partition of the queue, as the
/// batches planned so far leave it.
pub fn plan_seek(store: &Store, overlay: &mut Overlay, queue: &str, group: &str, to: SeekTo) -> Vec<Effect> {
    let Some(q) = overlay.queue_id(store, queue) else { return vec![] };
    overlay
        .partition_ends(store, q)
        .into_iter()
        .map(|(p, end)| {
            let offset = match to {
                SeekTo::End => end,
                SeekTo::Time(t) => store.locator.first_at_or_after(q, p, t).unwrap_or(end),
            };
            seek(overlay, q, p, group, offset)
        })
        .collect()
}

/// A `Seek` effect, and the cursor it leaves for the commands planned after it.
fn seek(overlay: &mut Overlay, queue: u64, partition: u64, group: &str, offset: u64) -> Effect {
    overlay.put_cursor((queue, partition, group.to_string()), CursorRow { committed: offset, ..Default::default() });
    Effect::Seek { queue, partition, group: group.to_string(), offset }
}

/// Forgets the group on `queue`, or on every queue; answers the effects and
/// how many partition cursors go.
pub fn plan_delete(
    store: &Store,
    overlay: &Overlay,
    queue: Option<&str>,
    group: &str,
    metadata: bool,
) -> (Vec<Effect>, usize) {
    let queues = match queue {
        Some(name) => overlay.queue_id(store, name).into_iter().collect(),
        None => queues_of(store, overlay, group),
    };
    let cursors = store.cursors.iter().filter(|(k, _)| k.2 == group && queues.contains(&k.0)).count();
    let effects =
        queues.into_iter().map(|queue| Effect::DeleteGroup { queue, group: group.to_string(), metadata }).collect();
    (effects, cursors)
}

/// Re-subscribes the group from `from_us` on every queue it consumes: its
/// cursors are moved to the first message stored at or after that time.
pub fn plan_resubscribe(store: &Store, overlay: &mut Overlay, group: &str, from_us: i64, now_us: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    for q in queues_of(store, overlay, group) {
        let conflate = overlay.group(store, q, group).is_some_and(|g| g.conflate);
        overlay.put_group(q, group, GroupRow { from_us, created_us: now_us, conflate });
        effects.push(Effect::Subscribe { queue: q, group: group.to_string(), from_us, conflate });
        for (p, end) in overlay.partition_ends(store, q) {
            let offset = store.locator.first_at_or_after(q, p, from_us).unwrap_or(end);
            effects.push(seek(overlay, q, p, group, offset));
        }
    }
    effects
}

/// Sends a dead letter back: every group (or `only`) that dead-lettered the
/// offset gets it delivered again.
pub fn plan_redeliver(
    store: &Store,
    overlay: &mut Overlay,
    (queue, partition, offset): (u64, u64, u64),
    only: Option<&str>,
) -> Vec<Effect> {
    if overlay.is_deleted(queue) {
        return vec![];
    }
    let dead: Vec<String> = store
        .dlq
        .range((queue, partition, String::new(), 0)..)
        .take_while(|((q, p, _, _), _)| (*q, *p) == (queue, partition))
        .filter(|((_, _, g, o), _)| *o == offset && only.is_none_or(|want| want == g))
        .map(|((_, _, g, _), _)| g.clone())
        .collect();
    dead.into_iter()
        .map(|group| {
            let key = (queue, partition, group.clone());
            overlay.update_cursor(store, &key, |c| cursor::mark_undone(c, offset));
            Effect::Redeliver { queue, partition, group, offset }
        })
        .collect()
}
