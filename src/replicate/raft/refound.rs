//! A founding cut short. The lowest-numbered peer founds the cluster with
//! openraft's `initialize`, which writes the membership entry and campaigns
//! at once; the vote of that campaign is saved before the entry is durable,
//! so a crash in between leaves a vote above term 0 on an empty log. openraft
//! takes such a node for initialized and never founds the cluster, and every
//! node waits forever as a learner (the cluster simulator's seed 5257).

use super::log_storage::RaftLog;
use crate::log_id::LogId;
use crate::planner::effect::{Effect, Entry, EntryBody};
use crate::store::rows::{Member, Membership};
use std::collections::BTreeMap;

/// Writes the founding membership entry again before openraft starts, as
/// `initialize` writes it: the same log id and membership as any copy a peer
/// received, so nothing diverges; and the vote is kept, so this node's next
/// campaign is in a later term than any it may have led, whose entries a
/// peer may hold. Answers whether it wrote the entry.
pub async fn found_again_if_cut_short(log: &RaftLog, me: u64, peers: &BTreeMap<u64, Member>) -> std::io::Result<bool> {
    let own_campaign = log.saved_vote()?.is_some_and(|v| v.term > 0 && v.node == me);
    if log.last().is_some() || !own_campaign {
        return Ok(false);
    }
    let membership = Membership {
        configs: vec![peers.keys().copied().collect()],
        members: peers.iter().map(|(id, member)| (*id, member.clone())).collect(),
    };
    // openraft's first log id: term 0, led by the founder, raft index 0.
    let entry = Entry {
        id: LogId::new(0, 1),
        leader: me,
        body: EntryBody { timestamp_us: 0, effects: vec![Effect::Membership(membership)] },
        messages: vec![],
    };
    log.append_before_launch(entry).await?;
    Ok(true)
}
