//! Share groups' membership (KIP-932's ShareGroupHeartbeat), kept in this
//! coordinator's memory. Every member is given every partition of the
//! topics it subscribes to: a share group divides a partition's records
//! among its members record by record (the broker's acquisition locks), so
//! no partition needs one owner. What is durable, the records' states,
//! lives in the broker; a coordinator that restarts forgets the members,
//! which rejoin at UNKNOWN_MEMBER_ID as in a classic group.

use super::consumer_group::Topic;
use protocol::ResponseError;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Topic id → partitions.
pub type Assignment = BTreeMap<[u8; 16], Vec<i32>>;

#[derive(Debug, Clone)]
pub struct ShareMember {
    pub epoch: i32,
    pub subscribed: Vec<String>,
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub assignment: Assignment,
    /// Whether the member was told its current assignment.
    told: bool,
    seen: Instant,
}

#[derive(Debug, Default)]
pub struct ShareGroup {
    /// Raised at every change of membership or assignment.
    pub epoch: i32,
    pub members: BTreeMap<String, ShareMember>,
}

impl ShareGroup {
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }
}

/// One ShareGroupHeartbeat, as the member sent it.
pub struct ShareBeat<'a> {
    pub member_id: &'a str,
    pub epoch: i32,
    pub rack: Option<&'a str>,
    pub subscribed: Option<Vec<String>>,
    pub client_id: &'a str,
    pub client_host: &'a str,
}

/// What a heartbeat answers: the member's epoch (-1 once it left) and its
/// assignment when it changed since the member was last told.
pub struct ShareBeatAnswer {
    pub epoch: i32,
    pub assignment: Option<Assignment>,
}

pub type Refusal = (ResponseError, String);

pub struct ShareGroups {
    groups: Mutex<HashMap<String, ShareGroup>>,
    /// `group.share.session.timeout.ms`: a member silent this long leaves.
    pub session: Duration,
    /// `group.share.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
}

fn assignment_of(subscribed: &[String], topics: &[Topic]) -> Assignment {
    topics.iter().filter(|t| subscribed.contains(&t.name)).map(|t| (t.id, (0..t.partitions).collect())).collect()
}

impl ShareGroups {
    pub fn new(session: Duration, heartbeat_interval: Duration) -> Self {
        Self { groups: Mutex::default(), session, heartbeat_interval }
    }

    /// Applies a member's heartbeat. Answers also the members of the group
    /// that timed out (and the member itself when it left), whose records
    /// the caller gives back.
    pub fn heartbeat(
        &self,
        group_id: &str,
        beat: ShareBeat<'_>,
        topics: &[Topic],
        now: Instant,
    ) -> (Result<ShareBeatAnswer, Refusal>, Vec<String>) {
        let mut groups = self.groups.lock().expect("share groups lock");
        let group = groups.entry(group_id.to_string()).or_default();
        let mut gone = self.expire(group, now);
        let answer = Self::beat(group, beat, topics, now, &mut gone);
        (answer, gone)
    }

    fn beat(
        group: &mut ShareGroup,
        beat: ShareBeat<'_>,
        topics: &[Topic],
        now: Instant,
        gone: &mut Vec<String>,
    ) -> Result<ShareBeatAnswer, Refusal> {
        let id = beat.member_id.to_string();
        match beat.epoch {
            -1 => {
                if group.members.remove(&id).is_some() {
                    group.epoch += 1;
                }
                gone.push(id);
                return Ok(ShareBeatAnswer { epoch: -1, assignment: None });
            }
            0 => {
                let Some(subscribed) = beat.subscribed.clone() else {
                    return Err((
                        ResponseError::InvalidRequest,
                        "SubscribedTopicNames must be set when joining".into(),
                    ));
                };
                group.epoch += 1;
                let member = ShareMember {
                    epoch: group.epoch,
                    subscribed,
                    rack: beat.rack.map(str::to_string),
                    client_id: beat.client_id.to_string(),
                    client_host: beat.client_host.to_string(),
                    assignment: Assignment::new(),
                    told: false,
                    seen: now,
                };
                group.members.insert(id.clone(), member);
            }
            epoch => {
                let Some(member) = group.members.get(&id) else {
                    return Err((ResponseError::UnknownMemberId, format!("member {id} is not in the group")));
                };
                if member.epoch != epoch {
                    let why = format!("member {id} is at epoch {}, not {epoch}", member.epoch);
                    return Err((ResponseError::FencedMemberEpoch, why));
                }
            }
        }
        let member = group.members.get_mut(&id).expect("joined or found above");
        member.seen = now;
        if let Some(subscribed) = beat.subscribed {
            member.subscribed = subscribed;
        }
        let assignment = assignment_of(&member.subscribed, topics);
        if assignment != member.assignment {
            group.epoch += 1;
            member.epoch = group.epoch;
            member.assignment = assignment;
            member.told = false;
        }
        let told = std::mem::replace(&mut member.told, true);
        Ok(ShareBeatAnswer { epoch: member.epoch, assignment: (!told).then(|| member.assignment.clone()) })
    }

    /// Drops the members silent for a session timeout, answering their ids.
    fn expire(&self, group: &mut ShareGroup, now: Instant) -> Vec<String> {
        let silent: Vec<String> = group
            .members
            .iter()
            .filter(|(_, m)| now.duration_since(m.seen) > self.session)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &silent {
            group.members.remove(id);
        }
        if !silent.is_empty() {
            group.epoch += 1;
        }
        silent
    }

    /// A copy of group `id`'s membership, if this coordinator knows it.
    pub fn describe(&self, id: &str) -> Option<(i32, Vec<(String, ShareMember)>)> {
        let groups = self.groups.lock().expect("share groups lock");
        let g = groups.get(id)?;
        Some((g.epoch, g.members.iter().map(|(k, m)| (k.clone(), m.clone())).collect()))
    }

    /// Whether group `id` has share members here.
    pub fn has_members(&self, id: &str) -> bool {
        self.groups.lock().expect("share groups lock").get(id).is_some_and(|g| !g.members.is_empty())
    }

    /// Group `id`'s state as Kafka names it: Stable with members, else Empty.
    pub fn state(&self, id: &str) -> &'static str {
        self.groups.lock().expect("share groups lock").get(id).map_or("Empty", ShareGroup::state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic() -> Vec<Topic> {
        vec![Topic { name: "t".into(), id: [7; 16], partitions: 2 }]
    }

    fn beat(member_id: &str, epoch: i32, subscribed: Option<Vec<String>>) -> ShareBeat<'_> {
        ShareBeat { member_id, epoch, rack: None, subscribed, client_id: "c", client_host: "h" }
    }

    #[test]
    fn every_member_is_given_every_partition_and_told_it_once() {
        let groups = ShareGroups::new(Duration::from_secs(45), Duration::from_secs(5));
        let now = Instant::now();
        let sub = Some(vec!["t".to_string()]);
        let (a, _) = groups.heartbeat("g", beat("a", 0, sub.clone()), &topic(), now);
        let a = a.unwrap();
        assert_eq!(a.assignment.unwrap()[&[7; 16]], vec![0, 1]);
        let (b, _) = groups.heartbeat("g", beat("b", 0, sub), &topic(), now);
        assert_eq!(b.unwrap().assignment.unwrap()[&[7; 16]], vec![0, 1]);
        let (again, _) = groups.heartbeat("g", beat("a", a.epoch, None), &topic(), now);
        assert!(again.unwrap().assignment.is_none(), "an unchanged assignment is not sent again");
    }

    #[test]
    fn a_silent_member_is_dropped_and_a_stale_epoch_is_fenced() {
        let groups = ShareGroups::new(Duration::from_secs(1), Duration::from_secs(5));
        let now = Instant::now();
        let (a, _) = groups.heartbeat("g", beat("a", 0, Some(vec!["t".into()])), &topic(), now);
        let epoch = a.unwrap().epoch;
        let (fenced, _) = groups.heartbeat("g", beat("a", epoch + 5, None), &topic(), now);
        assert_eq!(fenced.err().unwrap().0, ResponseError::FencedMemberEpoch);
        let later = now + Duration::from_secs(2);
        let (b, gone) = groups.heartbeat("g", beat("b", 0, Some(vec!["t".into()])), &topic(), later);
        assert!(b.is_ok());
        assert_eq!(gone, vec!["a".to_string()]);
        let (unknown, _) = groups.heartbeat("g", beat("a", epoch, None), &topic(), later);
        assert_eq!(unknown.err().unwrap().0, ResponseError::UnknownMemberId);
    }
}
