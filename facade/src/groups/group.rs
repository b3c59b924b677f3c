//! One group's state machine: Empty → PreparingRebalance (members rejoin)
//! → CompletingRebalance (the leader assigns) → Stable, and back to
//! PreparingRebalance whenever a member joins, leaves or times out. A
//! static member (KIP-345) that comes back under a new member id while the
//! group is Stable takes its old place and assignment with no rebalance;
//! its old id is fenced.

use bytes::Bytes;
use protocol::ResponseError;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }
}

/// A JoinGroup as the group sees it.
pub struct JoinAsk {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    /// JoinGroup v4+ hands a new member its id first and asks it to rejoin.
    pub requires_known_id: bool,
}

#[derive(Debug, Clone, Default)]
pub struct JoinOutcome {
    pub error: i16,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// For the leader only: every member's (id, instance id, metadata).
    pub members: Vec<(String, Option<String>, Bytes)>,
}

impl JoinOutcome {
    pub fn error(error: ResponseError, member_id: &str) -> Self {
        Self { error: error.code(), generation: -1, member_id: member_id.to_string(), ..Default::default() }
    }
}

#[derive(Debug, Clone, Default)]
pub struct SyncOutcome {
    pub error: i16,
    pub assignment: Bytes,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
}

impl SyncOutcome {
    pub fn error(error: ResponseError) -> Self {
        Self { error: error.code(), ..Default::default() }
    }
}

pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    last_seen: Instant,
    /// The order members joined in: the first is the default leader.
    joined: u64,
    join_waiter: Option<oneshot::Sender<JoinOutcome>>,
    sync_waiter: Option<oneshot::Sender<SyncOutcome>>,
}

/// What a join does: answer at once, or wait for the rebalance to complete.
pub enum Joined {
    Now(JoinOutcome),
    Wait(oneshot::Receiver<JoinOutcome>),
}

pub enum Synced {
    Now(SyncOutcome),
    Wait(oneshot::Receiver<SyncOutcome>),
}

pub struct Group {
    pub state: State,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, not yet joined with.
    pending: HashSet<String>,
    /// Static membership: group.instance.id → member id.
    instances: HashMap<String, String>,
    rebalance_deadline: Instant,
    /// A new group's first rebalance waits this long for more members.
    initial_delay_until: Option<Instant>,
    joins: u64,
}

impl Group {
    pub fn new() -> Self {
        Self {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            pending: HashSet::new(),
            instances: HashMap::new(),
            rebalance_deadline: Instant::now(),
            initial_delay_until: None,
            joins: 0,
        }
    }

    pub fn join(&mut self, ask: JoinAsk, now: Instant, initial_delay: Duration) -> Joined {
        if !self.members.is_empty() && self.protocol_type.as_deref().is_some_and(|t| t != ask.protocol_type) {
            return Joined::Now(JoinOutcome::error(ResponseError::InconsistentGroupProtocol, &ask.member_id));
        }
        let supported = |name: &str| self.members.values().all(|m| m.protocols.iter().any(|(p, _)| p == name));
        if ask.protocols.is_empty() || !ask.protocols.iter().any(|(p, _)| supported(p)) {
            return Joined::Now(JoinOutcome::error(ResponseError::InconsistentGroupProtocol, &ask.member_id));
        }
        let member_id = if ask.member_id.is_empty() {
            match ask.instance_id.as_ref().and_then(|i| self.instances.get(i)).cloned() {
                Some(old) => return self.rejoin_static(&old, ask, now, initial_delay),
                None => {
                    let id = format!("{}-{}", ask.client_id, uuid::Uuid::new_v4());
                    if let Some(instance) = &ask.instance_id {
                        self.instances.insert(instance.clone(), id.clone());
                    } else if ask.requires_known_id {
                        self.pending.insert(id.clone());
                        return Joined::Now(JoinOutcome::error(ResponseError::MemberIdRequired, &id));
                    }
                    id
                }
            }
        } else {
            if let Err(fenced) = self.check_instance(&ask.member_id, ask.instance_id.as_deref()) {
                return Joined::Now(JoinOutcome::error(fenced, &ask.member_id));
            }
            if !self.members.contains_key(&ask.member_id) && !self.pending.remove(&ask.member_id) {
                return Joined::Now(JoinOutcome::error(ResponseError::UnknownMemberId, &ask.member_id));
            }
            ask.member_id.clone()
        };

        let (tx, rx) = oneshot::channel();
        self.joins += 1;
        let joined = self.joins;
        let member = self.members.entry(member_id.clone()).or_insert_with(|| Member {
            id: member_id.clone(),
            instance_id: ask.instance_id.clone(),
            client_id: ask.client_id.clone(),
            client_host: ask.client_host.clone(),
            protocols: vec![],
            assignment: Bytes::new(),
            session_timeout: ask.session_timeout,
            rebalance_timeout: ask.rebalance_timeout,
            last_seen: now,
            joined,
            join_waiter: None,
            sync_waiter: None,
        });
        member.protocols = ask.protocols;
        member.session_timeout = ask.session_timeout;
        member.rebalance_timeout = ask.rebalance_timeout;
        member.last_seen = now;
        member.join_waiter = Some(tx);
        self.protocol_type = Some(ask.protocol_type);

        if self.state != State::PreparingRebalance {
            self.begin_rebalance(now, initial_delay);
        }
        self.try_complete(now);
        Joined::Wait(rx)
    }

    /// A static member back under a new id (KIP-345, as Kafka's coordinator
    /// does it): the new id takes the old one's place, assignment and join
    /// order, and the old id is fenced. In a Stable group whose protocol
    /// would not change the member gets the current generation at once and
    /// nobody rebalances; the leader named is the one before the swap, so a
    /// returning leader does not assign again. Otherwise it joins the
    /// rebalance under way, or starts one.
    fn rejoin_static(&mut self, old_id: &str, ask: JoinAsk, now: Instant, initial_delay: Duration) -> Joined {
        let leader_before = self.leader.clone().unwrap_or_default();
        let mut member = self.members.remove(old_id).expect("an instance maps to a live member");
        if let Some(w) = member.join_waiter.take() {
            let _ = w.send(JoinOutcome::error(ResponseError::FencedInstanceId, old_id));
        }
        if let Some(w) = member.sync_waiter.take() {
            let _ = w.send(SyncOutcome::error(ResponseError::FencedInstanceId));
        }
        let new_id = format!("{}-{}", ask.client_id, uuid::Uuid::new_v4());
        let instance = ask.instance_id.clone().expect("a static member has an instance id");
        self.instances.insert(instance, new_id.clone());
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.clone());
        }
        member.id = new_id.clone();
        member.client_id = ask.client_id;
        member.client_host = ask.client_host;
        member.protocols = ask.protocols;
        member.session_timeout = ask.session_timeout;
        member.rebalance_timeout = ask.rebalance_timeout;
        member.last_seen = now;
        self.members.insert(new_id.clone(), member);
        if self.state == State::Stable && self.select_protocol() == self.protocol {
            return Joined::Now(JoinOutcome {
                error: 0,
                generation: self.generation,
                protocol_type: self.protocol_type.clone(),
                protocol: self.protocol.clone(),
                leader: leader_before,
                member_id: new_id,
                members: vec![],
            });
        }
        let (tx, rx) = oneshot::channel();
        self.members.get_mut(&new_id).expect("inserted above").join_waiter = Some(tx);
        if self.state != State::PreparingRebalance {
            self.begin_rebalance(now, initial_delay);
        }
        self.try_complete(now);
        Joined::Wait(rx)
    }

    /// The protocol the next generation would use: the first of the
    /// longest-standing member's protocols that every member supports.
    fn select_protocol(&self) -> Option<String> {
        let mut order: Vec<&Member> = self.members.values().collect();
        order.sort_by_key(|m| m.joined);
        let first = order.first()?;
        first
            .protocols
            .iter()
            .map(|(p, _)| p.clone())
            .find(|p| order.iter().all(|m| m.protocols.iter().any(|(q, _)| q == p)))
    }

    /// A static member's requests carry its instance id: one whose member
    /// id is no longer the instance's was replaced by a newer start of the
    /// same instance, and is fenced.
    fn check_instance(&self, member_id: &str, instance_id: Option<&str>) -> Result<(), ResponseError> {
        match instance_id.and_then(|i| self.instances.get(i)) {
            Some(current) if current != member_id => Err(ResponseError::FencedInstanceId),
            _ => Ok(()),
        }
    }

    /// Starts a rebalance: every member must rejoin.
    pub fn begin_rebalance(&mut self, now: Instant, initial_delay: Duration) {
        let longest = self.members.values().map(|m| m.rebalance_timeout).max().unwrap_or_default();
        self.rebalance_deadline = now + longest;
        self.initial_delay_until = (self.state == State::Empty).then(|| now + initial_delay.min(longest));
        self.state = State::PreparingRebalance;
        for m in self.members.values_mut() {
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(SyncOutcome::error(ResponseError::RebalanceInProgress));
            }
        }
    }

    /// Completes a rebalance once every member has rejoined (and a new
    /// group's initial delay has passed), or at the deadline without the
    /// members that did not rejoin. Answers whether it completed.
    pub fn try_complete(&mut self, now: Instant) -> bool {
        if self.state != State::PreparingRebalance {
            return true;
        }
        let all_joined = self.members.values().all(|m| m.join_waiter.is_some());
        let delay_over = self.initial_delay_until.is_none_or(|d| now >= d);
        if !(all_joined && delay_over) && now < self.rebalance_deadline {
            return false;
        }
        self.members.retain(|_, m| m.join_waiter.is_some());
        self.generation += 1;
        if self.members.is_empty() {
            self.become_empty();
            return true;
        }
        let protocol = self.select_protocol().expect("a member joins only with a protocol every member supports");
        let mut order: Vec<&Member> = self.members.values().collect();
        order.sort_by_key(|m| m.joined);
        let leader = match &self.leader {
            Some(l) if self.members.contains_key(l) => l.clone(),
            _ => order[0].id.clone(),
        };
        let roster: Vec<(String, Option<String>, Bytes)> = order
            .iter()
            .map(|m| {
                let metadata =
                    m.protocols.iter().find(|(p, _)| *p == protocol).map(|(_, b)| b.clone()).unwrap_or_default();
                (m.id.clone(), m.instance_id.clone(), metadata)
            })
            .collect();
        self.protocol = Some(protocol.clone());
        self.leader = Some(leader.clone());
        self.state = State::CompletingRebalance;
        for m in self.members.values_mut() {
            m.last_seen = now;
            m.assignment = Bytes::new();
            if let Some(w) = m.join_waiter.take() {
                let _ = w.send(JoinOutcome {
                    error: 0,
                    generation: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol: Some(protocol.clone()),
                    leader: leader.clone(),
                    member_id: m.id.clone(),
                    members: if m.id == leader { roster.clone() } else { vec![] },
                });
            }
        }
        true
    }

    fn become_empty(&mut self) {
        self.state = State::Empty;
        self.leader = None;
        self.protocol = None;
    }

    fn check_member(&self, member_id: &str, instance_id: Option<&str>, generation: i32) -> Result<(), ResponseError> {
        self.check_instance(member_id, instance_id)?;
        if !self.members.contains_key(member_id) {
            return Err(ResponseError::UnknownMemberId);
        }
        if generation != self.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        Ok(())
    }

    pub fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
        now: Instant,
    ) -> Synced {
        if let Err(e) = self.check_member(member_id, instance_id, generation) {
            return Synced::Now(SyncOutcome::error(e));
        }
        let done = |g: &Group, assignment: Bytes| SyncOutcome {
            error: 0,
            assignment,
            protocol_type: g.protocol_type.clone(),
            protocol: g.protocol.clone(),
        };
        match self.state {
            State::Empty | State::PreparingRebalance => {
                Synced::Now(SyncOutcome::error(ResponseError::RebalanceInProgress))
            }
            State::Stable => Synced::Now(done(self, self.members[member_id].assignment.clone())),
            State::CompletingRebalance => {
                if self.leader.as_deref() != Some(member_id) {
                    let (tx, rx) = oneshot::channel();
                    let m = self.members.get_mut(member_id).expect("checked above");
                    m.last_seen = now;
                    m.sync_waiter = Some(tx);
                    return Synced::Wait(rx);
                }
                for (id, assignment) in assignments {
                    if let Some(m) = self.members.get_mut(&id) {
                        m.assignment = assignment;
                    }
                }
                self.state = State::Stable;
                let outcomes: Vec<(Option<oneshot::Sender<SyncOutcome>>, SyncOutcome)> = self
                    .members
                    .values_mut()
                    .map(|m| {
                        m.last_seen = now;
                        (m.sync_waiter.take(), m.assignment.clone())
                    })
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|(w, a)| (w, done(self, a)))
                    .collect();
                for (w, outcome) in outcomes {
                    if let Some(w) = w {
                        let _ = w.send(outcome);
                    }
                }
                Synced::Now(done(self, self.members[member_id].assignment.clone()))
            }
        }
    }

    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: Instant,
    ) -> Result<(), ResponseError> {
        if let Some(m) = self.members.get_mut(member_id) {
            m.last_seen = now;
        }
        self.check_member(member_id, instance_id, generation)?;
        match self.state {
            State::PreparingRebalance => Err(ResponseError::RebalanceInProgress),
            State::Empty => Err(ResponseError::UnknownMemberId),
            State::CompletingRebalance | State::Stable => Ok(()),
        }
    }

    /// Whether a commit from this member at this generation may go through.
    /// A commit with generation -1 comes from outside group management.
    pub fn may_commit(&self, member_id: &str, instance_id: Option<&str>, generation: i32) -> Result<(), ResponseError> {
        if generation < 0 && member_id.is_empty() {
            return Ok(());
        }
        self.check_member(member_id, instance_id, generation)?;
        match self.state {
            State::CompletingRebalance => Err(ResponseError::RebalanceInProgress),
            _ => Ok(()),
        }
    }

    /// Removes members (by member id, or by instance id for static members);
    /// answers one error code per asked member.
    pub fn leave(&mut self, who: &[(String, Option<String>)], now: Instant, initial_delay: Duration) -> Vec<i16> {
        let mut codes = Vec::with_capacity(who.len());
        let mut removed = false;
        for (member_id, instance_id) in who {
            // A static member leaves by instance id; one naming a member id
            // the instance no longer has is fenced.
            let known_id = !member_id.is_empty();
            if known_id && self.check_instance(member_id, instance_id.as_deref()).is_err() {
                codes.push(ResponseError::FencedInstanceId.code());
                continue;
            }
            let id = match instance_id {
                Some(i) => self.instances.get(i).cloned(),
                None => Some(member_id.clone()),
            };
            match id.and_then(|id| self.members.remove(&id)) {
                Some(m) => {
                    if let Some(i) = &m.instance_id {
                        self.instances.remove(i);
                    }
                    removed = true;
                    codes.push(0);
                }
                None => codes.push(ResponseError::UnknownMemberId.code()),
            }
        }
        if removed {
            self.membership_changed(now, initial_delay);
        }
        codes
    }

    /// Drops members whose session ran out (a member waiting in a join is
    /// alive: it is doing what the group asked).
    pub fn expire(&mut self, now: Instant, initial_delay: Duration) {
        let before = self.members.len();
        self.members.retain(|_, m| m.join_waiter.is_some() || now.duration_since(m.last_seen) <= m.session_timeout);
        if self.members.len() != before {
            let live: HashSet<&String> = self.members.keys().collect();
            self.instances.retain(|_, id| live.contains(id));
            self.membership_changed(now, initial_delay);
        }
    }

    fn membership_changed(&mut self, now: Instant, initial_delay: Duration) {
        match self.state {
            State::PreparingRebalance => {
                self.try_complete(now);
            }
            _ if self.members.is_empty() => {
                self.generation += 1;
                self.become_empty();
            }
            _ => self.begin_rebalance(now, initial_delay),
        }
    }
}
