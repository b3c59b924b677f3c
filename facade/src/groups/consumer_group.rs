//! One group of the consumer group protocol (KIP-848): the coordinator
//! decides each member's partitions, and members only heartbeat.
//!
//! The group epoch rises whenever the membership or what it subscribes to
//! changes; the target assignment is then recomputed by the group's
//! assignor (`assignor.rs`). Each member moves towards its target one
//! heartbeat at a time, revoke before assign: a member first gives up what
//! the target took from it (it is told its reduced assignment and keeps its
//! epoch until a heartbeat shows it no longer owns those partitions), then
//! takes the group's assignment epoch and the partitions of its target that
//! no other member still owns; the rest follow on later heartbeats, once
//! their previous owners have let them go. So no partition is ever owned by
//! two members at once. A member silent for its session timeout is removed,
//! and one that does not revoke within its rebalance timeout is fenced.
//!
//! What a member is told is durable before it is told: the coordinator
//! saves the group's state (`durable`) whenever it changes, and a new
//! coordinator (a new raft leader) loads it, so members carry on through a
//! failover at their epochs, with their partitions, and nobody is given a
//! partition another member still owns. Only the members' clocks (session
//! and revocation deadlines) are not saved: a loaded group gives every
//! member a whole session and rebalance timeout again.

use super::assignor::{self, MemberSpec, Target, TopicPartition, TopicSpec, ASSIGNORS};
use protocol::ResponseError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// An epoch a member sends to leave the group.
pub const LEAVE_EPOCH: i32 = -1;
/// An epoch a static member sends to leave for a while, keeping its
/// partitions for the member that comes back with its instance id.
pub const STATIC_LEAVE_EPOCH: i32 = -2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberState {
    Stable,
    /// Told to give partitions up, and has not yet.
    UnrevokedPartitions,
    /// Waits for partitions of its target that other members still own.
    UnreleasedPartitions,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub epoch: i32,
    previous_epoch: i32,
    pub state: MemberState,
    rebalance_timeout: Duration,
    pub subscribed_names: Vec<String>,
    pub subscribed_regex: Option<String>,
    assignor: Option<String>,
    /// The partitions it owns now, and those it was told to give up.
    pub assigned: BTreeSet<TopicPartition>,
    /// The member epoch at which it was given each partition it owns.
    #[serde(with = "pairs")]
    assigned_at: BTreeMap<TopicPartition, i32>,
    revoking: BTreeSet<TopicPartition>,
    /// The assignment last sent to it, so an unchanged one is not resent.
    sent: Option<BTreeSet<TopicPartition>>,
    /// Its clocks, not saved: a loaded group starts them again.
    #[serde(skip)]
    session_ends: Option<Instant>,
    #[serde(skip)]
    revoke_by: Option<Instant>,
}

/// A map whose keys are not strings, as JSON holds it: a list of pairs.
mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(map: &BTreeMap<K, V>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub fn deserialize<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<K, V>, D::Error> {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

/// A heartbeat, as the request carries it; `None` fields are unchanged.
pub struct Beat<'a> {
    pub member_id: &'a str,
    pub epoch: i32,
    pub instance_id: Option<&'a str>,
    pub rack_id: Option<&'a str>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_names: Option<Vec<String>>,
    pub subscribed_regex: Option<&'a str>,
    pub assignor: Option<&'a str>,
    pub owned: Option<BTreeSet<TopicPartition>>,
    pub client_id: &'a str,
    pub client_host: &'a str,
}

/// What a heartbeat is answered.
#[derive(Debug, PartialEq)]
pub struct BeatAnswer {
    pub member_id: String,
    pub epoch: i32,
    /// The member's whole assignment, when it is new to it.
    pub assignment: Option<BTreeSet<TopicPartition>>,
}

/// A heartbeat refused: the error and why.
pub type Refusal = (ResponseError, String);

/// A topic that exists, for subscriptions to resolve against.
pub struct Topic {
    pub name: String,
    pub id: [u8; 16],
    pub partitions: i32,
}

#[derive(Default, Serialize, Deserialize)]
pub struct ConsumerGroup {
    /// Rises with every save, so a coordinator knows whether the state it
    /// holds is the last one saved.
    pub version: u64,
    /// Rises with every change of membership or subscriptions.
    pub epoch: i32,
    /// The group epoch the target assignment was computed at.
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, Member>,
    pub target: Target,
    /// The topics and partition counts the target was computed over.
    assigned_over: Vec<(String, [u8; 16], i32)>,
    /// When the group epoch last moved; a clock, not saved.
    #[serde(skip)]
    moved_at: Option<Instant>,
}

fn refuse(error: ResponseError, why: impl Into<String>) -> Refusal {
    (error, why.into())
}

/// The regular expression of a subscription, matched against whole names.
fn compile(regex: &str) -> Result<regex::Regex, Refusal> {
    regex::Regex::new(&format!("^(?:{regex})$"))
        .map_err(|e| refuse(ResponseError::InvalidRegularExpression, format!("{regex:?}: {e}")))
}

impl Member {
    fn subscribes_to(&self, name: &str, regex: Option<&regex::Regex>) -> bool {
        self.subscribed_names.iter().any(|n| n == name) || regex.is_some_and(|r| r.is_match(name))
    }

    /// Every partition it holds: owned, or given up and not yet let go.
    fn holds(&self, tp: &TopicPartition) -> bool {
        self.assigned.contains(tp) || self.revoking.contains(tp)
    }
}

impl ConsumerGroup {
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The group's state as ConsumerGroupDescribe names it.
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.assignment_epoch < self.epoch {
            "Assigning"
        } else if self.members.values().any(|m| m.epoch != self.assignment_epoch || m.state != MemberState::Stable) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// Whether the group is still settling at `now`: reconciling, or its
    /// epoch moved within `window`. A member learns that its partitions
    /// moved only when it next beats, so a group that has just changed
    /// (members join in bursts) asks its members to beat sooner: each step
    /// of a rebalance (revoke, then assign the freed partition) then takes
    /// a fraction of the regular interval instead of a whole one.
    pub fn settling(&self, now: Instant, window: Duration) -> bool {
        self.state() != "Stable" || self.moved_at.is_some_and(|at| now.saturating_duration_since(at) < window)
    }

    /// Notes when the group epoch moved from `before`.
    fn note_move(&mut self, before: i32, now: Instant) {
        if self.epoch != before {
            self.moved_at = Some(now);
        }
    }

    /// The assignor the group runs: the one most members ask for, else the default.
    pub fn assignor(&self) -> &'static str {
        let mut asked: BTreeMap<&str, usize> = BTreeMap::new();
        for name in self.members.values().filter_map(|m| m.assignor.as_deref()) {
            *asked.entry(name).or_default() += 1;
        }
        let most = asked.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0))).map(|(name, _)| name);
        ASSIGNORS.into_iter().find(|a| Some(*a) == most).unwrap_or(ASSIGNORS[0])
    }

    /// The state to save, as text.
    pub fn durable(&self) -> String {
        serde_json::to_string(self).expect("a consumer group serializes")
    }

    /// A group loaded from its saved state at `now`: every member gets a
    /// whole session, and one that must give partitions up a whole
    /// rebalance timeout, from now.
    pub fn load(saved: &str, now: Instant, session: Duration) -> Result<Self, String> {
        let mut group: Self = serde_json::from_str(saved).map_err(|e| e.to_string())?;
        for m in group.members.values_mut() {
            m.session_ends = Some(now + session);
            m.revoke_by = (m.state == MemberState::UnrevokedPartitions).then(|| now + m.rebalance_timeout);
        }
        Ok(group)
    }

    /// Drops members whose session ran out, and fences those that did not
    /// give partitions up within their rebalance timeout.
    pub fn expire(&mut self, now: Instant) {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.session_ends.is_some_and(|e| e <= now) || m.revoke_by.is_some_and(|by| by <= now))
            .map(|m| m.id.clone())
            .collect();
        let before = self.epoch;
        for id in gone {
            tracing::info!(member = %id, "a consumer group member timed out and leaves its group");
            self.remove(&id);
        }
        self.note_move(before, now);
    }

    fn remove(&mut self, id: &str) {
        if self.members.remove(id).is_some() {
            self.epoch += 1;
        }
    }

    /// Whether a member may commit offsets at `epoch` (OffsetCommit v9,
    /// KIP-1251's rule): it must be in the group and not ahead of its
    /// epoch; answers the epoch at which it was given each partition it
    /// owns, below which a commit to that partition is stale. A commit
    /// with no member and a negative epoch is an admin's, or a consumer's
    /// that assigns itself partitions.
    pub fn may_commit(&self, member_id: &str, epoch: i32) -> Result<BTreeMap<TopicPartition, i32>, ResponseError> {
        if epoch < 0 && member_id.is_empty() {
            return Ok(BTreeMap::new());
        }
        match self.members.get(member_id) {
            None => Err(ResponseError::UnknownMemberId),
            Some(m) if epoch > m.epoch => Err(ResponseError::StaleMemberEpoch),
            Some(m) => Ok(m.assigned_at.clone()),
        }
    }

    /// Whether a member may read the group's offsets at `epoch`
    /// (OffsetFetch v9): at its epoch exactly.
    pub fn may_fetch(&self, member_id: &str, epoch: i32) -> Result<(), ResponseError> {
        match self.members.get(member_id) {
            None => Err(ResponseError::UnknownMemberId),
            Some(m) if m.epoch != epoch => Err(ResponseError::StaleMemberEpoch),
            Some(_) => Ok(()),
        }
    }

    /// One heartbeat at `now`, with the topics that exist; answers what the
    /// member is told, or why it is refused.
    pub fn heartbeat(
        &mut self,
        beat: Beat<'_>,
        now: Instant,
        session: Duration,
        topics: &[Topic],
    ) -> Result<BeatAnswer, Refusal> {
        let before = self.epoch;
        self.expire(now);
        if let Some(regex) = beat.subscribed_regex.filter(|r| !r.is_empty()) {
            compile(regex)?;
        }
        if let Some(name) = beat.assignor.filter(|a| !ASSIGNORS.contains(a)) {
            return Err(refuse(
                ResponseError::UnsupportedAssignor,
                format!("assignor {name:?} is not one of {ASSIGNORS:?}"),
            ));
        }
        let full = beat.rebalance_timeout_ms != -1 && beat.subscribed_names.is_some() && beat.owned.is_some();
        let id = beat.member_id.to_string();
        match beat.epoch {
            LEAVE_EPOCH | STATIC_LEAVE_EPOCH => {
                // A static member's partitions wait for its return only as
                // long as its session: here it leaves at once.
                self.remove(&id);
                self.note_move(before, now);
                return Ok(BeatAnswer { member_id: id, epoch: beat.epoch, assignment: None });
            }
            0 => self.join(&beat, now, session)?,
            epoch if epoch > 0 => {
                let Some(member) = self.members.get(&id) else {
                    return Err(refuse(ResponseError::UnknownMemberId, format!("member {id} is not in the group")));
                };
                let lost_answer = epoch == member.previous_epoch
                    && beat.owned.as_ref().is_some_and(|owned| owned.is_subset(&member.assigned));
                if epoch != member.epoch && !lost_answer {
                    return Err(refuse(
                        ResponseError::FencedMemberEpoch,
                        format!("member {id} is at epoch {}, not {epoch}", member.epoch),
                    ));
                }
            }
            epoch => return Err(refuse(ResponseError::InvalidRequest, format!("member epoch {epoch} is not valid"))),
        }
        let member = self.members.get_mut(&id).expect("joined or checked above");
        member.session_ends = Some(now + session);
        let mut changed = false;
        if let Some(names) = beat.subscribed_names {
            changed |= names != member.subscribed_names;
            member.subscribed_names = names;
        }
        if let Some(regex) = beat.subscribed_regex {
            let regex = (!regex.is_empty()).then(|| regex.to_string());
            changed |= regex != member.subscribed_regex;
            member.subscribed_regex = regex;
        }
        if let Some(name) = beat.assignor {
            changed |= member.assignor.as_deref() != Some(name);
            member.assignor = Some(name.to_string());
        }
        if beat.rebalance_timeout_ms >= 0 {
            member.rebalance_timeout = Duration::from_millis(beat.rebalance_timeout_ms as u64);
        }
        if let Some(rack) = beat.rack_id {
            member.rack_id = Some(rack.to_string());
        }
        if changed {
            self.epoch += 1;
        }
        self.retarget(topics);
        self.reconcile(&id, beat.owned.as_ref(), now);
        self.note_move(before, now);
        let member = self.members.get_mut(&id).expect("reconciled");
        let resend = beat.epoch == 0 || full || member.sent.as_ref() != Some(&member.assigned);
        let assignment = resend.then(|| member.assigned.clone());
        if let Some(sent) = &assignment {
            member.sent = Some(sent.clone());
        }
        Ok(BeatAnswer { member_id: id, epoch: member.epoch, assignment })
    }

    /// A member joins (epoch 0): a new one, or one coming back under its
    /// member id after it was fenced, which starts over.
    fn join(&mut self, beat: &Beat<'_>, now: Instant, session: Duration) -> Result<(), Refusal> {
        if beat.member_id.is_empty() {
            return Err(refuse(ResponseError::InvalidRequest, "MemberId can't be empty"));
        }
        if beat.rebalance_timeout_ms == -1 || (beat.subscribed_names.is_none() && beat.subscribed_regex.is_none()) {
            return Err(refuse(
                ResponseError::InvalidRequest,
                "a member joins with its rebalance timeout and its subscription",
            ));
        }
        if beat.owned.as_ref().is_some_and(|owned| !owned.is_empty()) {
            return Err(refuse(ResponseError::InvalidRequest, "a member joins owning no partitions"));
        }
        if let Some(instance) = beat.instance_id {
            let holder =
                self.members.values().find(|m| m.instance_id.as_deref() == Some(instance) && m.id != beat.member_id);
            if let Some(holder) = holder {
                return Err(refuse(
                    ResponseError::UnreleasedInstanceId,
                    format!("instance {instance} is still held by member {}", holder.id),
                ));
            }
        }
        self.remove(beat.member_id);
        self.members.insert(
            beat.member_id.to_string(),
            Member {
                id: beat.member_id.to_string(),
                instance_id: beat.instance_id.map(str::to_string),
                rack_id: None,
                client_id: beat.client_id.to_string(),
                client_host: beat.client_host.to_string(),
                epoch: 0,
                previous_epoch: 0,
                state: MemberState::Stable,
                rebalance_timeout: Duration::from_millis(beat.rebalance_timeout_ms.max(0) as u64),
                subscribed_names: Vec::new(),
                subscribed_regex: None,
                assignor: None,
                assigned: BTreeSet::new(),
                assigned_at: BTreeMap::new(),
                revoking: BTreeSet::new(),
                sent: None,
                session_ends: Some(now + session),
                revoke_by: None,
            },
        );
        self.epoch += 1;
        Ok(())
    }

    /// Recomputes the target assignment when the group epoch moved past it
    /// or the subscribed topics changed (created, deleted, grown).
    fn retarget(&mut self, topics: &[Topic]) {
        let regexes: BTreeMap<String, regex::Regex> = self
            .members
            .values()
            .filter_map(|m| m.subscribed_regex.as_ref())
            .filter_map(|r| compile(r).ok().map(|c| (r.clone(), c)))
            .collect();
        let regex_of = |m: &Member| m.subscribed_regex.as_ref().and_then(|r| regexes.get(r));
        let subscribed: Vec<(String, [u8; 16], i32)> = topics
            .iter()
            .filter(|t| self.members.values().any(|m| m.subscribes_to(&t.name, regex_of(m))))
            .map(|t| (t.name.clone(), t.id, t.partitions))
            .collect();
        if subscribed != self.assigned_over {
            self.epoch += 1;
        }
        if self.assignment_epoch == self.epoch {
            return;
        }
        let specs: BTreeMap<String, MemberSpec<'_>> = self
            .members
            .values()
            .map(|m| {
                let topics = subscribed.iter().filter(|t| m.subscribes_to(&t.0, regex_of(m))).map(|t| t.1).collect();
                (m.id.clone(), MemberSpec { instance_id: m.instance_id.as_deref(), topics })
            })
            .collect();
        let topic_specs: BTreeMap<String, TopicSpec> =
            subscribed.iter().map(|(name, id, p)| (name.clone(), TopicSpec { id: *id, partitions: *p })).collect();
        self.target = assignor::assign(self.assignor(), &specs, &topic_specs, &self.target);
        self.assigned_over = subscribed;
        self.assignment_epoch = self.epoch;
    }

    /// Moves member `id` towards its target, revoke before assign.
    fn reconcile(&mut self, id: &str, owned: Option<&BTreeSet<TopicPartition>>, now: Instant) {
        let member = &self.members[id];
        if member.state == MemberState::UnrevokedPartitions {
            // Still owns some of what it must give up (an absent list counts as owning).
            if owned.is_none_or(|owned| owned.iter().any(|tp| member.revoking.contains(tp))) {
                return;
            }
        }
        if member.epoch == self.assignment_epoch && member.state == MemberState::Stable {
            return;
        }
        let target = self.target.get(id).cloned().unwrap_or_default();
        let held_elsewhere: BTreeSet<TopicPartition> = self
            .members
            .values()
            .filter(|m| m.id != id)
            .flat_map(|m| m.assigned.iter().chain(&m.revoking))
            .copied()
            .collect();
        let member = self.members.get_mut(id).expect("a member");
        member.revoking.clear();
        member.revoke_by = None;
        let keep: BTreeSet<TopicPartition> = member.assigned.intersection(&target).copied().collect();
        let revoke: BTreeSet<TopicPartition> = member.assigned.difference(&target).copied().collect();
        if !revoke.is_empty() {
            member.assigned_at.retain(|tp, _| keep.contains(tp));
            member.assigned = keep;
            member.revoking = revoke;
            member.state = MemberState::UnrevokedPartitions;
            member.revoke_by = Some(now + member.rebalance_timeout);
            return;
        }
        let wanted: Vec<TopicPartition> = target.difference(&keep).copied().collect();
        let free: Vec<TopicPartition> = wanted.iter().filter(|tp| !held_elsewhere.contains(tp)).copied().collect();
        member.state = if free.len() < wanted.len() { MemberState::UnreleasedPartitions } else { MemberState::Stable };
        if member.epoch != self.assignment_epoch {
            member.previous_epoch = member.epoch;
            member.epoch = self.assignment_epoch;
        }
        for tp in &free {
            member.assigned_at.insert(*tp, member.epoch);
        }
        member.assigned = keep.into_iter().chain(free).collect();
        debug_assert!(
            self.members
                .values()
                .filter(|m| m.id != id)
                .all(|m| !self.members[id].assigned.iter().any(|tp| m.holds(tp))),
            "a partition was given to member {id} while another member holds it"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: Duration = Duration::from_secs(45);

    fn topics() -> Vec<Topic> {
        vec![Topic { name: "t".into(), id: [7; 16], partitions: 4 }]
    }

    fn join<'a>(id: &'a str) -> Beat<'a> {
        Beat {
            member_id: id,
            epoch: 0,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: 30_000,
            subscribed_names: Some(vec!["t".into()]),
            subscribed_regex: None,
            assignor: None,
            owned: Some(BTreeSet::new()),
            client_id: "c",
            client_host: "h",
        }
    }

    fn beat<'a>(id: &'a str, epoch: i32, owned: &BTreeSet<TopicPartition>) -> Beat<'a> {
        Beat { epoch, rebalance_timeout_ms: -1, subscribed_names: None, owned: Some(owned.clone()), ..join(id) }
    }

    /// No partition is held by two members: each member's owned and revoking sets are disjoint from the others'.
    fn disjoint(g: &ConsumerGroup) {
        let mut seen = BTreeSet::new();
        for m in g.members.values() {
            for tp in m.assigned.iter().chain(&m.revoking) {
                assert!(seen.insert(*tp), "{tp:?} held twice");
            }
        }
    }

    #[test]
    fn a_second_member_gets_partitions_only_after_the_first_revokes_them() {
        let (mut g, now) = (ConsumerGroup::default(), Instant::now());
        let a = g.heartbeat(join("a"), now, SESSION, &topics()).unwrap();
        let owned_a = a.assignment.clone().unwrap();
        assert_eq!(owned_a.len(), 4, "alone, a member gets every partition");
        let b = g.heartbeat(join("b"), now, SESSION, &topics()).unwrap();
        assert_eq!(b.assignment, Some(BTreeSet::new()), "b waits: a still owns them all");
        disjoint(&g);
        // a is told to give two up, at its old epoch.
        let a2 = g.heartbeat(beat("a", a.epoch, &owned_a), now, SESSION, &topics()).unwrap();
        let kept = a2.assignment.clone().unwrap();
        assert_eq!((kept.len(), a2.epoch), (2, a.epoch));
        assert_eq!(g.members["a"].state, MemberState::UnrevokedPartitions);
        // Until a's heartbeat shows them released, b gets nothing.
        let b2 = g.heartbeat(beat("b", b.epoch, &BTreeSet::new()), now, SESSION, &topics()).unwrap();
        assert!(g.members["b"].assigned.is_empty(), "{b2:?}");
        let a3 = g.heartbeat(beat("a", a.epoch, &kept), now, SESSION, &topics()).unwrap();
        assert_eq!(a3.epoch, g.assignment_epoch);
        let b3 = g.heartbeat(beat("b", b2.epoch, &BTreeSet::new()), now, SESSION, &topics()).unwrap();
        assert_eq!(b3.assignment.unwrap().len(), 2);
        assert_eq!(g.state(), "Stable");
        disjoint(&g);
    }

    #[test]
    fn a_group_settles_while_it_reconciles_or_just_changed_and_then_beats_at_the_regular_pace() {
        let (mut g, now) = (ConsumerGroup::default(), Instant::now());
        let window = Duration::from_secs(5);
        let a = g.heartbeat(join("a"), now, SESSION, &topics()).unwrap();
        assert!(g.settling(now, window), "a member just joined: more may follow");
        let owned = a.assignment.unwrap();
        let later = now + window;
        g.heartbeat(beat("a", a.epoch, &owned), later, SESSION, &topics()).unwrap();
        assert!(!g.settling(later, window), "alone and stable for a whole interval");
        let b = g.heartbeat(join("b"), later, SESSION, &topics()).unwrap();
        let much_later = later + 2 * window;
        assert!(g.settling(much_later, window), "a still owns what b's target holds: reconciling");
        let kept = g.heartbeat(beat("a", a.epoch, &owned), much_later, SESSION, &topics()).unwrap().assignment.unwrap();
        g.heartbeat(beat("a", a.epoch, &kept), much_later, SESSION, &topics()).unwrap();
        g.heartbeat(beat("b", b.epoch, &BTreeSet::new()), much_later, SESSION, &topics()).unwrap();
        assert_eq!(g.state(), "Stable");
        assert!(!g.settling(much_later, window), "no epoch moved within the window");
    }

    #[test]
    fn a_member_silent_past_its_session_leaves_and_its_partitions_move() {
        let (mut g, now) = (ConsumerGroup::default(), Instant::now());
        g.heartbeat(join("a"), now, SESSION, &topics()).unwrap();
        let b = g.heartbeat(join("b"), now, SESSION, &topics()).unwrap();
        let b = g.heartbeat(beat("b", b.epoch, &BTreeSet::new()), now + SESSION / 2, SESSION, &topics()).unwrap();
        let later = now + SESSION + Duration::from_secs(1);
        let b2 = g.heartbeat(beat("b", b.epoch, &BTreeSet::new()), later, SESSION, &topics()).unwrap();
        assert!(!g.members.contains_key("a"));
        assert_eq!(b2.assignment.unwrap().len(), 4);
    }

    #[test]
    fn wrong_epochs_and_unknown_members_and_assignors_are_refused() {
        let (mut g, now) = (ConsumerGroup::default(), Instant::now());
        let a = g.heartbeat(join("a"), now, SESSION, &topics()).unwrap();
        let err = g.heartbeat(beat("a", a.epoch + 5, &BTreeSet::new()), now, SESSION, &topics()).unwrap_err();
        assert_eq!(err.0, ResponseError::FencedMemberEpoch);
        let err = g.heartbeat(beat("x", 3, &BTreeSet::new()), now, SESSION, &topics()).unwrap_err();
        assert_eq!(err.0, ResponseError::UnknownMemberId);
        let err = g.heartbeat(Beat { assignor: Some("sticky"), ..join("c") }, now, SESSION, &topics()).unwrap_err();
        assert_eq!(err.0, ResponseError::UnsupportedAssignor);
        let err = g.heartbeat(Beat { subscribed_regex: Some("(("), ..join("d") }, now, SESSION, &topics()).unwrap_err();
        assert_eq!(err.0, ResponseError::InvalidRegularExpression);
        let given = g.may_commit("a", a.epoch).unwrap();
        assert_eq!(given.len(), 4, "each partition with the epoch it was given at");
        assert!(given.values().all(|e| *e == a.epoch));
        assert_eq!(g.may_commit("a", a.epoch + 1), Err(ResponseError::StaleMemberEpoch));
        assert_eq!(g.may_fetch("a", a.epoch - 1), Err(ResponseError::StaleMemberEpoch));
        let left = g.heartbeat(beat("a", LEAVE_EPOCH, &BTreeSet::new()), now, SESSION, &topics()).unwrap();
        assert_eq!(left.epoch, LEAVE_EPOCH);
        assert!(g.is_empty());
    }

    #[test]
    fn a_loaded_group_carries_on_where_the_saved_one_was() {
        let (mut g, now) = (ConsumerGroup::default(), Instant::now());
        let a = g.heartbeat(join("a"), now, SESSION, &topics()).unwrap();
        g.heartbeat(join("b"), now, SESSION, &topics()).unwrap();
        let owned = a.assignment.unwrap();
        let a2 = g.heartbeat(beat("a", a.epoch, &owned), now, SESSION, &topics()).unwrap();
        assert_eq!(g.members["a"].state, MemberState::UnrevokedPartitions);
        let mut loaded = ConsumerGroup::load(&g.durable(), now, SESSION).unwrap();
        assert_eq!(loaded.durable(), g.durable(), "what is saved is what is loaded");
        // a carries on at its epoch and gives up what it was told to.
        let kept = a2.assignment.unwrap();
        let a3 = loaded.heartbeat(beat("a", a.epoch, &kept), now, SESSION, &topics()).unwrap();
        assert_eq!(a3.epoch, loaded.assignment_epoch);
        disjoint(&loaded);
    }

    #[test]
    fn a_regex_subscription_matches_whole_names() {
        let (mut g, now) = (ConsumerGroup::default(), Instant::now());
        let topics = vec![
            Topic { name: "orders".into(), id: [1; 16], partitions: 1 },
            Topic { name: "orders-eu".into(), id: [2; 16], partitions: 1 },
        ];
        let beat = Beat { subscribed_names: Some(vec![]), subscribed_regex: Some("orders"), ..join("a") };
        let a = g.heartbeat(beat, now, SESSION, &topics).unwrap();
        assert_eq!(a.assignment.unwrap(), BTreeSet::from([([1; 16], 0)]));
    }
}
