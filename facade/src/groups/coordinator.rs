//! Every group this node coordinates. Waiting members drive their group's
//! clock: a member parked in JoinGroup or SyncGroup re-checks the group every
//! tick, so a rebalance completes at its deadline and a silent member's
//! session runs out without a background task.

use super::group::{Group, JoinAsk, JoinOutcome, Joined, SyncOutcome, Synced};
use bytes::Bytes;
use protocol::ResponseError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(100);

pub struct Coordinator {
    groups: Mutex<HashMap<String, Arc<Mutex<Group>>>>,
    initial_delay: Duration,
}

impl Coordinator {
    pub fn new(initial_delay: Duration) -> Self {
        Self { groups: Mutex::new(HashMap::new()), initial_delay }
    }

    fn group(&self, id: &str) -> Arc<Mutex<Group>> {
        self.groups
            .lock()
            .expect("groups lock")
            .entry(id.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(Group::new())))
            .clone()
    }

    /// The group, with expired members dropped, if this node knows it.
    pub fn existing(&self, id: &str) -> Option<Arc<Mutex<Group>>> {
        let group = self.groups.lock().expect("groups lock").get(id).cloned()?;
        group.lock().expect("group lock").expire(Instant::now(), self.initial_delay);
        Some(group)
    }

    pub fn names(&self) -> Vec<String> {
        self.groups.lock().expect("groups lock").keys().cloned().collect()
    }

    /// Forgets a group that has no members; answers whether it was empty.
    pub fn remove_if_empty(&self, id: &str) -> bool {
        let mut groups = self.groups.lock().expect("groups lock");
        let empty = groups.get(id).is_none_or(|g| g.lock().expect("group lock").members.is_empty());
        if empty {
            groups.remove(id);
        }
        empty
    }

    pub async fn join(&self, group_id: &str, ask: JoinAsk) -> JoinOutcome {
        let member = ask.member_id.clone();
        let group = self.group(group_id);
        let mut rx = {
            let mut g = group.lock().expect("group lock");
            let now = Instant::now();
            g.expire(now, self.initial_delay);
            match g.join(ask, now, self.initial_delay) {
                Joined::Now(outcome) => return outcome,
                Joined::Wait(rx) => rx,
            }
        };
        loop {
            tokio::select! {
                answer = &mut rx => {
                    // The waiter was replaced by a newer join of the same member.
                    return answer.unwrap_or_else(|_| JoinOutcome::error(ResponseError::RebalanceInProgress, &member));
                }
                _ = tokio::time::sleep(TICK) => {
                    // A member that died is dropped at its session's end, as
                    // Kafka drops it, not at the rebalance deadline (a
                    // consumer's max.poll.interval.ms, minutes for Streams).
                    let mut g = group.lock().expect("group lock");
                    let now = Instant::now();
                    g.expire(now, self.initial_delay);
                    g.try_complete(now);
                }
            }
        }
    }

    pub async fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncOutcome {
        let Some(group) = self.existing(group_id) else {
            return SyncOutcome::error(ResponseError::UnknownMemberId);
        };
        let synced =
            group.lock().expect("group lock").sync(member_id, instance_id, generation, assignments, Instant::now());
        let mut rx = match synced {
            Synced::Now(outcome) => return outcome,
            Synced::Wait(rx) => rx,
        };
        loop {
            tokio::select! {
                answer = &mut rx => {
                    return answer.unwrap_or_else(|_| SyncOutcome::error(ResponseError::RebalanceInProgress));
                }
                _ = tokio::time::sleep(TICK) => {
                    // The leader may have died before assigning.
                    group.lock().expect("group lock").expire(Instant::now(), self.initial_delay);
                }
            }
        }
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), ResponseError> {
        let group = self.existing(group_id).ok_or(ResponseError::UnknownMemberId)?;
        let mut g = group.lock().expect("group lock");
        g.heartbeat(member_id, instance_id, generation, Instant::now())
    }

    pub fn leave(&self, group_id: &str, who: &[(String, Option<String>)]) -> Result<Vec<i16>, ResponseError> {
        let group = self.existing(group_id).ok_or(ResponseError::UnknownMemberId)?;
        let mut g = group.lock().expect("group lock");
        Ok(g.leave(who, Instant::now(), self.initial_delay))
    }

    pub fn may_commit(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), ResponseError> {
        match self.existing(group_id) {
            Some(group) => group.lock().expect("group lock").may_commit(member_id, instance_id, generation),
            None if generation < 0 => Ok(()),
            None => Err(ResponseError::UnknownMemberId),
        }
    }
}
