//! The server-side assignors of the consumer group protocol (KIP-848):
//! `uniform`, the default, which balances partitions over the members and
//! keeps each member's previous partitions where balance allows, and
//! `range`, which gives each member a contiguous block of each topic it
//! subscribes to. Both are deterministic: topics in name order, partitions
//! ascending, members by id.

use std::collections::{BTreeMap, BTreeSet};

/// A topic by its id, and a partition of it.
pub type TopicPartition = ([u8; 16], i32);

/// The assignors this coordinator runs, the first the default.
pub const ASSIGNORS: [&str; 2] = ["uniform", "range"];

/// What an assignor is given about one member.
pub struct MemberSpec<'a> {
    pub instance_id: Option<&'a str>,
    /// The topics (by id) it subscribes to that exist.
    pub topics: BTreeSet<[u8; 16]>,
}

/// A topic as the assignors see it.
pub struct TopicSpec {
    pub id: [u8; 16],
    pub partitions: i32,
}

/// The target assignment: every partition of a subscribed topic given to
/// one member subscribed to it.
pub type Target = BTreeMap<String, BTreeSet<TopicPartition>>;

/// Runs the assignor `name` (one of `ASSIGNORS`).
pub fn assign(
    name: &str,
    members: &BTreeMap<String, MemberSpec<'_>>,
    topics: &BTreeMap<String, TopicSpec>,
    previous: &Target,
) -> Target {
    match name {
        "range" => range(members, topics),
        _ => uniform(members, topics, previous),
    }
}

fn uniform(
    members: &BTreeMap<String, MemberSpec<'_>>,
    topics: &BTreeMap<String, TopicSpec>,
    previous: &Target,
) -> Target {
    let mut target: Target = members.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    if members.is_empty() {
        return target;
    }
    let wanted: Vec<TopicPartition> = topics
        .values()
        .filter(|t| members.values().any(|m| m.topics.contains(&t.id)))
        .flat_map(|t| (0..t.partitions).map(move |p| (t.id, p)))
        .collect();
    let wanted_set: BTreeSet<TopicPartition> = wanted.iter().copied().collect();
    let (base, extra) = (wanted.len() / members.len(), wanted.len() % members.len());
    // Those holding most keep one above the even share first.
    let mut by_kept: Vec<(&String, Vec<TopicPartition>)> = members
        .iter()
        .map(|(id, spec)| {
            let kept = previous
                .get(id)
                .map(|had| {
                    had.iter().filter(|tp| spec.topics.contains(&tp.0) && wanted_set.contains(tp)).copied().collect()
                })
                .unwrap_or_default();
            (id, kept)
        })
        .collect();
    by_kept.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let mut taken = BTreeSet::new();
    for (i, (id, kept)) in by_kept.into_iter().enumerate() {
        let quota = base + usize::from(i < extra);
        let keep: BTreeSet<TopicPartition> = kept.into_iter().filter(|tp| !taken.contains(tp)).take(quota).collect();
        taken.extend(keep.iter().copied());
        target.insert(id.clone(), keep);
    }
    for tp in wanted.into_iter().filter(|tp| !taken.contains(tp)) {
        let fewest = members
            .iter()
            .filter(|(_, spec)| spec.topics.contains(&tp.0))
            .min_by(|a, b| target[a.0].len().cmp(&target[b.0].len()).then(a.0.cmp(b.0)))
            .map(|(id, _)| id.clone());
        if let Some(id) = fewest {
            target.get_mut(&id).expect("every member has a target").insert(tp);
        }
    }
    target
}

fn range(members: &BTreeMap<String, MemberSpec<'_>>, topics: &BTreeMap<String, TopicSpec>) -> Target {
    let mut target: Target = members.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    for topic in topics.values() {
        // Static members first, by instance id, so a restarted one gets its
        // block back; then the others by member id.
        let mut subscribed: Vec<(&String, &MemberSpec<'_>)> =
            members.iter().filter(|(_, spec)| spec.topics.contains(&topic.id)).collect();
        subscribed.sort_by(|a, b| match (a.1.instance_id, b.1.instance_id) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.0.cmp(b.0),
        });
        if subscribed.is_empty() {
            continue;
        }
        let (base, extra) =
            (topic.partitions as usize / subscribed.len(), topic.partitions as usize % subscribed.len());
        let mut next = 0i32;
        for (i, (id, _)) in subscribed.into_iter().enumerate() {
            let count = (base + usize::from(i < extra)) as i32;
            let block = target.get_mut(id).expect("every member has a target");
            block.extend((next..next + count).map(|p| (topic.id, p)));
            next += count;
        }
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(spec: &[(&str, u8, i32)]) -> BTreeMap<String, TopicSpec> {
        spec.iter().map(|(n, id, p)| (n.to_string(), TopicSpec { id: [*id; 16], partitions: *p })).collect()
    }

    fn members<'a>(ids: &[&str], topic_ids: &[u8]) -> BTreeMap<String, MemberSpec<'a>> {
        let topics: BTreeSet<[u8; 16]> = topic_ids.iter().map(|id| [*id; 16]).collect();
        ids.iter().map(|id| (id.to_string(), MemberSpec { instance_id: None, topics: topics.clone() })).collect()
    }

    fn counts(target: &Target) -> Vec<usize> {
        target.values().map(BTreeSet::len).collect()
    }

    #[test]
    fn uniform_balances_and_keeps_what_balance_allows() {
        let t = topics(&[("a", 1, 7)]);
        let first = assign("uniform", &members(&["m1", "m2", "m3"], &[1]), &t, &Target::new());
        assert_eq!(counts(&first), vec![3, 2, 2]);
        let all: BTreeSet<_> = first.values().flatten().collect();
        assert_eq!(all.len(), 7, "every partition once");
        // A fourth member takes from the others; nobody loses more than balance asks.
        let second = assign("uniform", &members(&["m1", "m2", "m3", "m4"], &[1]), &t, &first);
        assert_eq!(second.values().map(BTreeSet::len).max(), Some(2));
        for m in ["m1", "m2", "m3"] {
            assert!(second[m].is_subset(&first[m]), "{m} keeps a subset of what it had");
        }
        // Shrinking to two hands the leavers' partitions over, keeping the stayers'.
        let third = assign("uniform", &members(&["m1", "m2"], &[1]), &t, &second);
        assert_eq!(third.values().map(BTreeSet::len).sum::<usize>(), 7);
        assert!(second["m1"].is_subset(&third["m1"]) && second["m2"].is_subset(&third["m2"]));
    }

    #[test]
    fn range_gives_contiguous_blocks_per_topic() {
        let t = topics(&[("a", 1, 5), ("b", 2, 2)]);
        let target = assign("range", &members(&["m1", "m2"], &[1, 2]), &t, &Target::new());
        assert_eq!(target["m1"], BTreeSet::from([([1; 16], 0), ([1; 16], 1), ([1; 16], 2), ([2; 16], 0)]));
        assert_eq!(target["m2"], BTreeSet::from([([1; 16], 3), ([1; 16], 4), ([2; 16], 1)]));
    }

    #[test]
    fn a_topic_nobody_subscribes_to_is_not_assigned() {
        let t = topics(&[("a", 1, 2), ("b", 2, 2)]);
        let target = assign("uniform", &members(&["m1"], &[1]), &t, &Target::new());
        assert!(target["m1"].iter().all(|tp| tp.0 == [1; 16]));
        assert_eq!(target["m1"].len(), 2);
    }
}
