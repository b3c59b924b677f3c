//! Every group of the consumer group protocol (KIP-848) this node
//! coordinates, and the timings it gives their members.
//!
//! A group's calls take its lock in turn, each for its whole length: the
//! coordinator first makes sure it holds the state last saved (a new
//! coordinator, or one that coordinated before another did, loads it), then
//! applies the call, saves what changed and only then answers. So a member
//! is never told what a coordinator after this one would not know.

use super::assignor::TopicPartition;
use super::consumer_group::{Beat, BeatAnswer, ConsumerGroup, Refusal, Topic};
use crate::broker::Read;
use crate::Broker;
use protocol::ResponseError;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::OwnedMutexGuard;

/// How often members of a settling group are asked to beat
/// (`ConsumerGroup::settling`), when the regular interval is longer.
const SETTLING_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(500);

type Held = Arc<tokio::sync::Mutex<ConsumerGroup>>;

pub struct ConsumerGroups {
    groups: Mutex<HashMap<String, Held>>,
    /// `group.consumer.session.timeout.ms`: a member silent this long leaves.
    pub session: Duration,
    /// `group.consumer.heartbeat.interval.ms`: how often members beat.
    pub heartbeat_interval: Duration,
}

/// Why a group's state could not be had or kept.
fn unavailable(why: impl std::fmt::Display) -> Refusal {
    (ResponseError::CoordinatorNotAvailable, why.to_string())
}

impl ConsumerGroups {
    pub fn new(session: Duration, heartbeat_interval: Duration) -> Self {
        Self { groups: Mutex::default(), session, heartbeat_interval }
    }

    /// Group `id`, locked, as last saved, with timed-out members dropped.
    async fn lock<B: Broker>(&self, broker: &B, id: &str) -> Result<OwnedMutexGuard<ConsumerGroup>, Refusal> {
        let held = self.groups.lock().expect("consumer groups lock").entry(id.to_string()).or_default().clone();
        let mut group = held.lock_owned().await;
        broker.read_gate(Read::Coordinator).await.map_err(unavailable)?;
        let saved = broker.consumer_group_state(id);
        let version = saved.as_deref().map(|text| serde_json::from_str::<Version>(text).map(|v| v.version));
        match version {
            Some(Ok(v)) if v == group.version => {}
            Some(_) => {
                let text = saved.expect("read above");
                *group = ConsumerGroup::load(&text, Instant::now(), self.session)
                    .map_err(|e| unavailable(format!("consumer group {id}'s saved state does not read back: {e}")))?;
            }
            None if group.version != 0 => *group = ConsumerGroup::default(),
            None => {}
        }
        group.expire(Instant::now());
        Ok(group)
    }

    /// Saves `group` when it changed since it was loaded or last saved.
    async fn save<B: Broker>(
        &self,
        broker: &B,
        id: &str,
        group: &mut ConsumerGroup,
        before: &str,
    ) -> Result<(), Refusal> {
        if group.durable() == before {
            return Ok(());
        }
        group.version += 1;
        let saved = broker.save_consumer_group_state(id.to_string(), group.durable()).await;
        if let Err(e) = saved {
            // What this node holds is ahead of what is saved: load again next time.
            group.version = u64::MAX;
            return Err(unavailable(format!("consumer group {id}'s state could not be saved: {e}")));
        }
        Ok(())
    }

    pub async fn heartbeat<B: Broker>(
        &self,
        broker: &B,
        group_id: &str,
        beat: Beat<'_>,
        topics: &[Topic],
    ) -> Result<(BeatAnswer, Duration), Refusal> {
        let mut group = self.lock(broker, group_id).await?;
        let before = group.durable();
        let now = Instant::now();
        let answer = group.heartbeat(beat, now, self.session, topics);
        self.save(broker, group_id, &mut group, &before).await?;
        let interval = match group.settling(now, self.heartbeat_interval) {
            true => self.heartbeat_interval.min(SETTLING_HEARTBEAT_INTERVAL),
            false => self.heartbeat_interval,
        };
        answer.map(|a| (a, interval))
    }

    /// The group if it is a consumer-protocol group with members, as last
    /// saved; `None` otherwise.
    pub async fn existing<B: Broker>(&self, broker: &B, id: &str) -> Option<OwnedMutexGuard<ConsumerGroup>> {
        if !self.groups.lock().expect("consumer groups lock").contains_key(id)
            && broker.consumer_group_state(id).is_none()
        {
            return None;
        }
        let mut group = self.lock(broker, id).await.ok()?;
        let before = group.durable();
        // Members that timed out are gone for good.
        self.save(broker, id, &mut group, &before).await.ok()?;
        (!group.is_empty()).then_some(group)
    }

    /// The groups this node holds with members, and their states, without
    /// waiting on any.
    pub fn listed(&self) -> Vec<(String, &'static str)> {
        let groups = self.groups.lock().expect("consumer groups lock");
        let mut listed: Vec<(String, &'static str)> = groups
            .iter()
            .filter_map(|(name, g)| g.try_lock().ok().filter(|g| !g.is_empty()).map(|g| (name.clone(), g.state())))
            .collect();
        listed.sort_unstable();
        listed
    }

    /// Whether `member_id` may commit at `epoch` in `group_id`, and the
    /// epoch each of its partitions was given at (`ConsumerGroup::
    /// may_commit`): `None` when the group is not a consumer group with
    /// members.
    pub async fn may_commit<B: Broker>(
        &self,
        broker: &B,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) -> Option<Result<BTreeMap<TopicPartition, i32>, ResponseError>> {
        let group = self.existing(broker, group_id).await?;
        Some(group.may_commit(member_id, epoch))
    }

    /// Whether `member_id` may read `group_id`'s offsets at `epoch`: `None`
    /// when the group is not a consumer group with members.
    pub async fn may_fetch<B: Broker>(
        &self,
        broker: &B,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) -> Option<Result<(), ResponseError>> {
        let group = self.existing(broker, group_id).await?;
        Some(group.may_fetch(member_id, epoch))
    }
}

/// The version of a saved state, read without the rest.
#[derive(serde::Deserialize)]
struct Version {
    version: u64,
}
