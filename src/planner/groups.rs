//! Planning consumer-group administration: seek, delete, re-subscribe.

use super::command::SeekTo;
use super::cursor;
use super::effect::Effect;
use super::overlay::Overlay;
use crate::store::rows::GroupRow;
use crate::store::{CursorKey, Store};

/// The queues (id) a group has one of `cursors` or a subscription on, but for
/// those an unapplied batch deletes.
fn queues_of(store: &Store, overlay: &Overlay, cursors: &[CursorKey], group: &str) -> Vec<u64> {
    let mut out: Vec<u64> = cursors.iter().map(|k| k.0).collect();
    out.extend(overlay.group_rows(store, group));
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
                SeekTo::Time(t) => store.first_kept_at_or_after(q, p, t).unwrap_or(end),
            };
            seek(store, overlay, q, p, group, offset)
        })
        .collect()
}

/// A `Seek` effect, and the cursor it leaves for the commands planned after it.
fn seek(store: &Store, overlay: &mut Overlay, queue: u64, partition: u64, group: &str, offset: u64) -> Effect {
    overlay.place_cursor(store, (queue, partition, group.to_string()), offset);
    Effect::Seek { queue, partition, group: group.to_string(), offset }
}

/// Forgets the group on `queue`, or on every queue; answers the effects and
/// how many partition cursors go.
pub fn plan_delete(
    store: &Store,
    overlay: &mut Overlay,
    queue: Option<&str>,
    group: &str,
    metadata: bool,
) -> (Vec<Effect>, usize) {
    let mut cursors = overlay.group_cursors(store, group);
    let queues: Vec<u64> = match queue {
        Some(name) => overlay.queue_id(store, name).into_iter().collect(),
        None => queues_of(store, overlay, &cursors, group),
    };
    // Gone for the commands planned after this one, applied or not.
    cursors.retain(|k| queues.contains(&k.0));
    let removed = cursors.len();
    for key in cursors {
        overlay.remove_cursor(key);
    }
    let mut effects = Vec::with_capacity(queues.len());
    for queue in queues {
        if metadata {
            overlay.remove_group(queue, group);
        }
        effects.push(Effect::DeleteGroup { queue, group: group.to_string(), metadata });
    }
    (effects, removed)
}

/// Re-subscribes the group from `from_us` on every queue it consumes: its
/// cursors are moved to the first message stored at or after that time.
pub fn plan_resubscribe(store: &Store, overlay: &mut Overlay, group: &str, from_us: i64, now_us: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    let cursors = overlay.group_cursors(store, group);
    for q in queues_of(store, overlay, &cursors, group) {
        let conflate = overlay.group(store, q, group).is_some_and(|g| g.conflate);
        overlay.put_group(q, group, GroupRow { from_us, created_us: now_us, conflate });
        effects.push(Effect::Subscribe { queue: q, group: group.to_string(), from_us, conflate });
        for (p, end) in overlay.partition_ends(store, q) {
            let offset = store.first_kept_at_or_after(q, p, from_us).unwrap_or(end);
            effects.push(seek(store, overlay, q, p, group, offset));
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
    // Below the log start the message is gone: nothing to deliver again.
    if overlay.is_deleted(queue) || offset < overlay.log_start(store, queue, partition) {
        return vec![];
    }
    let dead: Vec<String> = store
        .dlq
        .range((queue, partition, String::new(), 0)..)
        .take_while(|((q, p, _, _), _)| (*q, *p) == (queue, partition))
        .filter(|((_, _, g, o), _)| *o == offset && only.is_none_or(|want| want == g))
        .map(|((_, _, g, _), _)| g.clone())
        .collect();
    // A group whose cursor is gone (deleted, applied or not) gets nothing:
    // a redelivery would make it a cursor from offset 0 behind the planner's back.
    dead.into_iter()
        .filter(|group| {
            let key = (queue, partition, group.clone());
            overlay.update_cursor(store, &key, |c| cursor::mark_undone(c, offset))
        })
        .map(|group| Effect::Redeliver { queue, partition, group, offset })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::planner::command::{AckStatus, Answer, Command};
    use crate::planner::testing::{ack, claimed, delete_group, one_message_applied, plan, pop, settle};

    #[test]
    fn commands_planned_after_an_unapplied_group_delete_see_the_group_gone() {
        let (mut store, mut planner) = one_message_applied();

        // Batches 2 to 4 are planned while none of them is applied.
        let pop = plan(&mut planner, &store, 2, pop("g"));
        let claim = claimed(&pop);
        let delete = plan(&mut planner, &store, 3, delete_group("g"));
        assert!(matches!(delete.answer, Answer::GroupChanged { partitions: 1 }), "{:?}", delete.answer);
        let ack = plan(&mut planner, &store, 4, ack(&claim, "t1", AckStatus::Completed));
        let Answer::Acked(outcomes) = &ack.answer else { panic!("ack answered {:?}", ack.answer) };
        assert!(outcomes[0].refused.is_some(), "an ack after the group's delete was judged on its old lease");

        for planned in [&pop, &delete, &ack] {
            settle(&mut store, planned);
        }
        assert!(store.cursors.iter().all(|(k, _)| k.2 != "g"), "the deleted group kept a cursor");
    }

    #[test]
    fn a_dead_letter_is_not_redelivered_to_a_group_deleted_since() {
        let (mut store, mut planner) = one_message_applied();
        let pop = plan(&mut planner, &store, 2, pop("g"));
        let claim = claimed(&pop);
        settle(&mut store, &pop);
        let dead = plan(&mut planner, &store, 3, ack(&claim, "t1", AckStatus::DeadLetter));
        settle(&mut store, &dead);
        planner.caught_up_with(&store);
        assert_eq!(store.dlq.iter().count(), 1, "the ack did not dead-letter the message");

        // The delete is planned and not applied when the redelivery is planned.
        let delete = plan(&mut planner, &store, 4, delete_group("g"));
        let redeliver = Command::Redeliver {
            queue: claim.queue_id,
            partition: claim.partition_id,
            offset: claim.messages[0].0,
            group: None,
        };
        let redeliver = plan(&mut planner, &store, 5, redeliver);
        assert!(matches!(redeliver.answer, Answer::GroupChanged { partitions: 0 }), "{:?}", redeliver.answer);
        for planned in [&delete, &redeliver] {
            settle(&mut store, planned);
        }
        assert!(store.cursors.iter().all(|(k, _)| k.2 != "g"), "a redelivery made the deleted group a cursor");
    }
}
