//! Spreads leadership over the nodes when a cluster runs several raft
//! groups (`QUEEN_RAFT_GROUPS`): group g prefers the voter at `g % n` of
//! its voters in id order, so with three nodes and four groups each node
//! leads at least one. The leader of a group hands it to the preferred node
//! once that node is live and caught up; one group at most moves per look,
//! and only after its leader has led it a while, so a node that just took
//! over from a failed or stopping one is not relieved at once.

use super::membership;
use super::state_machine::Machine;
use super::types::Queen;
use openraft::async_runtime::watch::WatchReceiver;
use openraft::{Raft, ServerState};
use std::time::Duration;
use tokio::time::Instant;

/// How often a leader looks at its group's preferred node.
const LOOK_EVERY: Duration = Duration::from_secs(2);
/// How long a node leads a group before it hands the group on.
const LEAD_AT_LEAST: Duration = Duration::from_secs(10);
/// How far behind the leader's log the preferred node may be.
const CAUGHT_UP_WITHIN: u64 = 64;
/// How long a hand-over may take before the leader leads on: the
/// balancer's, and a stopping leader's (`replicator.rs`).
pub(super) const TRANSFER_TIMEOUT: Duration = Duration::from_secs(3);

/// The node group `group` prefers as its leader among `voters`.
pub fn preferred(group: u32, voters: &[u64]) -> Option<u64> {
    (!voters.is_empty()).then(|| voters[group as usize % voters.len()])
}

/// Runs on every node for each of its groups, for as long as the group runs.
pub async fn prefer_leader<SM: Machine>(raft: Raft<Queen, SM>, group: u32) {
    let mut leading_since: Option<Instant> = None;
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        let m = raft.metrics().borrow_watched().clone();
        if m.state != ServerState::Leader || m.current_leader != Some(m.id) {
            leading_since = None;
            continue;
        }
        if leading_since.get_or_insert_with(Instant::now).elapsed() < LEAD_AT_LEAST {
            continue;
        }
        let view = membership::view(&m, None);
        let Some(to) = preferred(group, &view.voters).filter(|to| *to != m.id) else { continue };
        let ready =
            view.members.iter().any(|v| v.node_id == to && v.live && v.lag.is_some_and(|l| l <= CAUGHT_UP_WITHIN));
        if !ready {
            continue;
        }
        tracing::info!(group, to, "handing the group's leadership to its preferred node");
        let asked = tokio::time::timeout(TRANSFER_TIMEOUT, raft.trigger().transfer_leader(to)).await;
        if !matches!(asked, Ok(Ok(_))) {
            tracing::info!(group, to, "the hand-over to the preferred node did not start; the next look tries again");
        }
        leading_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::preferred;

    #[test]
    fn three_nodes_and_four_groups_give_every_node_a_group() {
        let voters = [1, 2, 3];
        let leaders: Vec<u64> = (0..4).map(|g| preferred(g, &voters).unwrap()).collect();
        assert_eq!(leaders, vec![1, 2, 3, 1]);
        assert_eq!(preferred(0, &[]), None);
    }
}
