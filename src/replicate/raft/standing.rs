//! Whether this node is a member of its raft group, and how a node removed
//! while it runs learns that it is not.
//!
//! openraft stops replicating to a removed voter as soon as the leader
//! appends the membership without it, so the removed node never receives
//! that membership: by its own log it is still a voter. It heard no leader
//! since, so it campaigned in every group with rising terms (the leader
//! lease refused its votes), and a client's request to it waited for a
//! leader until its timeout. Added back as a learner, its first answer to
//! the leader carried the higher term, and each group's leader stepped
//! down (issue 43: three leader changes in 3.6 s).
//!
//! Pre-vote (`replicator::config`) keeps a removed node's term where it
//! was, since no member would grant it; this file makes it stop asking and
//! answer at once. A voter of a committed membership answers the votes,
//! pre-votes, forwarded commands and read-index calls of a node that
//! membership leaves out with `NotAMember` and the membership's log id
//! (`outside`). The node believes it when that membership is newer than its
//! own (`Standing::told`): it answers its clients 503 `not_a_member` (Kafka
//! `NOT_LEADER_OR_FOLLOWER`), says `removed` in /health, and campaigns no
//! more until a newer membership reaches it, which the leader sends once
//! it is added again (`campaign_only_as_a_member`). Nothing of this is
//! stored: a removed node restarted campaigns once and is told again.

use super::state_machine::Machine;
use super::types::{Queen, RaftLogId};
use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Raft, RaftMetrics};
use std::sync::Arc;
use tokio::sync::watch;

pub struct Standing {
    /// Started with QUEEN_RAFT_JOIN: on an empty directory the node waits
    /// to be added, and is no member until a membership names it.
    join: bool,
    /// The newest membership a member said leaves this node out.
    told: watch::Sender<Option<RaftLogId>>,
}

impl Standing {
    pub fn new(join: bool) -> Self {
        Self { join, told: watch::Sender::new(None) }
    }

    /// A member said its membership `at` leaves this node out. Whether that
    /// stands is judged against this node's own membership when asked
    /// (`not_a_member`), since a member behind this node's log can say it
    /// of a membership this node already has a newer one than.
    pub fn told(&self, at: RaftLogId) {
        self.told.send_if_modified(|told| {
            let newer = told.is_none_or(|t| t < at);
            if newer {
                *told = Some(at);
            }
            newer
        });
    }

    /// Whether a member told this node it was removed, and no membership
    /// newer than the one it was told of names it yet: the one it was told
    /// of may reach it first, when it is added back.
    fn left_out(&self, m: &RaftMetrics<Queen>) -> bool {
        let Some(at) = *self.told.borrow() else { return false };
        let own = &m.membership_config;
        *own.log_id() < Some(at) || own.membership().get_node(&m.id).is_none()
    }

    /// Whether this node was started to join and no membership names it yet.
    pub fn joining(&self, m: &RaftMetrics<Queen>) -> bool {
        self.join && m.membership_config.membership().get_node(&m.id).is_none()
    }

    /// Whether this node serves nothing, as no member of its raft group:
    /// started to join and not added yet, outside the membership its own log
    /// holds, or told it was removed (`told`). A node of a cluster being
    /// founded, before the founder's membership reaches it, is none of
    /// these: it waits for its leader as before.
    pub fn not_a_member(&self, m: &RaftMetrics<Queen>) -> bool {
        let membership = m.membership_config.membership();
        if membership.get_node(&m.id).is_none() {
            return self.join || membership.nodes().next().is_some();
        }
        self.left_out(m)
    }
}

/// The membership that leaves node `from` out, when this node may say so:
/// it is a voter of that membership, its log holds it committed, and
/// `from` is neither voter nor learner there. A membership only appended
/// may still be replaced, and a node outside its own membership speaks
/// for nothing, so both stay silent.
pub fn outside(m: &RaftMetrics<Queen>, from: u64) -> Option<RaftLogId> {
    let at = (*m.membership_config.log_id())?;
    let membership = m.membership_config.membership();
    let speaks = membership.voter_ids().any(|v| v == m.id) && m.local_committed.is_some_and(|c| c >= at);
    (speaks && membership.get_node(&from).is_none()).then_some(at)
}

/// Keeps openraft's elections off while this node is told it was removed,
/// and turns them on again once a newer membership reaches it (it was
/// added back). Runs for as long as raft group `group` runs.
pub async fn campaign_only_as_a_member<SM: Machine>(raft: Raft<Queen, SM>, standing: Arc<Standing>, group: u32) {
    let mut told = standing.told.subscribe();
    let mut metrics = raft.metrics();
    let mut campaigning = true;
    loop {
        let left_out = standing.left_out(&metrics.borrow_watched());
        if left_out == campaigning {
            campaigning = !left_out;
            raft.runtime_config().elect(campaigning);
            match campaigning {
                false => tracing::warn!(
                    group,
                    "a member says the cluster removed this node from its membership: it campaigns no more and \
                     answers its clients 503 not_a_member until it is added again"
                ),
                true => tracing::info!(
                    group,
                    "a newer membership reached this node (it was added again): its elections are on again"
                ),
            }
        }
        // Only a node left out waits on its log's membership; the others
        // wait for the next word from a member.
        let changed = match campaigning {
            true => told.changed().await.is_ok(),
            false => tokio::select! {
                t = told.changed() => t.is_ok(),
                m = metrics.changed() => m.is_ok(),
            },
        };
        if !changed {
            return;
        }
    }
}
