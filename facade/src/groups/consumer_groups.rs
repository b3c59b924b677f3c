//! Every group of the consumer group protocol (KIP-848) this node
//! coordinates, each behind its own lock; and the timings it gives their
//! members.

use super::assignor::TopicPartition;
use super::consumer_group::{Beat, BeatAnswer, ConsumerGroup, Refusal, Topic};
use protocol::ResponseError;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct ConsumerGroups {
    groups: Mutex<HashMap<String, Arc<Mutex<ConsumerGroup>>>>,
    /// `group.consumer.session.timeout.ms`: a member silent this long leaves.
    pub session: Duration,
    /// `group.consumer.heartbeat.interval.ms`: how often members beat.
    pub heartbeat_interval: Duration,
}

impl ConsumerGroups {
    pub fn new(session: Duration, heartbeat_interval: Duration) -> Self {
        Self { groups: Mutex::default(), session, heartbeat_interval }
    }

    /// The group, with timed-out members dropped, if it has members.
    pub fn existing(&self, id: &str) -> Option<Arc<Mutex<ConsumerGroup>>> {
        let group = self.groups.lock().expect("consumer groups lock").get(id).cloned()?;
        let empty = {
            let mut g = group.lock().expect("consumer group lock");
            g.expire(Instant::now());
            g.is_empty()
        };
        (!empty).then_some(group)
    }

    pub fn names(&self) -> Vec<String> {
        let names: Vec<String> = self.groups.lock().expect("consumer groups lock").keys().cloned().collect();
        names.into_iter().filter(|n| self.existing(n).is_some()).collect()
    }

    pub fn heartbeat(&self, group_id: &str, beat: Beat<'_>, topics: &[Topic]) -> Result<BeatAnswer, Refusal> {
        let group = self
            .groups
            .lock()
            .expect("consumer groups lock")
            .entry(group_id.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(ConsumerGroup::default())))
            .clone();
        let answer = group.lock().expect("consumer group lock").heartbeat(beat, Instant::now(), self.session, topics);
        let mut groups = self.groups.lock().expect("consumer groups lock");
        if groups.get(group_id).is_some_and(|g| g.lock().expect("consumer group lock").is_empty()) {
            groups.remove(group_id);
        }
        answer
    }

    /// Whether `member_id` may commit at `epoch` in `group_id`, and the
    /// epoch each of its partitions was given at (`ConsumerGroup::
    /// may_commit`): `None` when the group is not a consumer group with
    /// members here.
    pub fn may_commit(
        &self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) -> Option<Result<BTreeMap<TopicPartition, i32>, ResponseError>> {
        let group = self.existing(group_id)?;
        let g = group.lock().expect("consumer group lock");
        Some(g.may_commit(member_id, epoch))
    }

    /// Whether `member_id` may read `group_id`'s offsets at `epoch`: `None`
    /// when the group is not a consumer group with members here.
    pub fn may_fetch(&self, group_id: &str, member_id: &str, epoch: i32) -> Option<Result<(), ResponseError>> {
        let group = self.existing(group_id)?;
        let g = group.lock().expect("consumer group lock");
        Some(g.may_fetch(member_id, epoch))
    }
}
