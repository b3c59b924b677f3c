//! Queen's openraft type configuration, and the translation between
//! openraft's entries and the qlog's.
//!
//! Two numberings meet here. openraft numbers its log from 0 (`initialize`
//! writes the first membership at index 0); the qlog and the store number
//! from 1, index 0 being "nothing applied". So raft index `i` is qlog index
//! `i + 1`, in this file only. A raft log id is (term, leader node, index);
//! the qlog keeps the term and index in every record's id and the leader in
//! the entry record, so each converts to the other without loss.

use crate::log_id::LogId;
use crate::planner::effect::{Effect, Entry, EntryBody};
use crate::qlog::message_record::MessageRecord;
use crate::store::rows::{Member, Membership};
use openraft::EntryPayload;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet};

/// A planned entry on its way into raft: what the leader's planner decided,
/// and the qlog log id it planned it under. The entry is applied only where
/// raft gives it that same id (`RaftLog::append`): a plan made against a
/// state the log did not reach is voided, never applied elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    pub planned: LogId,
    pub body: EntryBody,
    pub messages: Vec<MessageRecord>,
}

impl std::fmt::Display for Proposed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "planned {} ({} effects, {} message records)",
            self.planned,
            self.body.effects.len(),
            self.messages.len()
        )
    }
}

/// On the wire a proposal travels in the encodings the qlog stores it in.
#[derive(Serialize, Deserialize)]
struct ProposedWire {
    planned: LogId,
    #[serde(with = "serde_bytes")]
    body: Vec<u8>,
    messages: Vec<serde_bytes::ByteBuf>,
}

impl Serialize for Proposed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let messages = self
            .messages
            .iter()
            .map(|m| {
                let mut out = Vec::new();
                m.encode_into(&mut out);
                serde_bytes::ByteBuf::from(out)
            })
            .collect();
        ProposedWire { planned: self.planned, body: self.body.encode(), messages }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Proposed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = ProposedWire::deserialize(d)?;
        let body = EntryBody::decode(&wire.body).map_err(D::Error::custom)?;
        let messages = wire
            .messages
            .iter()
            .map(|m| MessageRecord::decode(m).map_err(D::Error::custom))
            .collect::<Result<_, _>>()?;
        Ok(Proposed { planned: wire.planned, body, messages })
    }
}

/// What applying an entry answered: the leader's waiting client gets the
/// planner's answer for an applied entry, and a retryable refusal for a
/// voided one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Applied {
    Applied,
    /// Raft gave the entry another id than the one it was planned under
    /// (the leadership that planned it ended first): it was stored blank.
    Voided,
}

openraft::declare_raft_types!(
    pub Queen:
        D = Proposed,
        R = Applied,
        NodeId = u64,
        Node = Member,
        AsyncRuntime = super::runtime::Runtime,
);

pub type RaftLogId = openraft::LogId<openraft::impls::leader_id_adv::LeaderId<u64, u64>>;
pub type RaftEntry = openraft::Entry<openraft::impls::leader_id_adv::LeaderId<u64, u64>, Payload>;
pub type Payload = EntryPayload<Proposed, u64, Member>;
pub type RaftMembership = openraft::Membership<u64, Member>;

/// The qlog id, and leader, of a raft log id.
pub fn to_qlog(id: &RaftLogId) -> (LogId, u64) {
    (LogId::new(id.leader_id.term, id.index + 1), id.leader_id.node_id)
}

/// The raft log id of a qlog id led by `leader`; `None` for qlog index 0,
/// which is "nothing" (raft's `None`).
pub fn to_raft(id: LogId, leader: u64) -> Option<RaftLogId> {
    let index = id.index.checked_sub(1)?;
    Some(openraft::LogId::new(openraft::impls::leader_id_adv::LeaderId { term: id.term, node_id: leader }, index))
}

pub fn membership_row(m: &RaftMembership) -> Membership {
    Membership {
        configs: m.get_joint_config().iter().map(|c| c.iter().copied().collect()).collect(),
        members: m.nodes().map(|(id, member)| (*id, member.clone())).collect(),
    }
}

pub fn raft_membership(m: &Membership) -> RaftMembership {
    let configs: Vec<BTreeSet<u64>> = m.configs.iter().map(|c| c.iter().copied().collect()).collect();
    let nodes: BTreeMap<u64, Member> = m.members.iter().cloned().collect();
    // Every stored membership came from a valid one (openraft checks each
    // before it proposes it).
    RaftMembership::new(configs, nodes)
        .unwrap_or_else(|e| panic!("invariant broken: a stored membership names a voter it has no address for: {e}"))
}

/// The qlog entry a raft entry is stored as. A blank entry has no effects;
/// a membership entry has one `Membership` effect; a normal entry is its
/// proposal, voided (stored blank) when raft gave it another id than the one
/// it was planned under.
pub fn to_qlog_entry(e: &RaftEntry) -> (Entry, bool) {
    let (id, leader) = to_qlog(&e.log_id);
    let blank =
        |timestamp_us| Entry { id, leader, body: EntryBody { timestamp_us, effects: vec![] }, messages: vec![] };
    match &e.payload {
        EntryPayload::Blank => (blank(0), false),
        EntryPayload::Membership(m) => {
            let body = EntryBody { timestamp_us: 0, effects: vec![Effect::Membership(membership_row(m))] };
            (Entry { id, leader, body, messages: vec![] }, false)
        }
        EntryPayload::Normal(p) if p.planned != id => (blank(p.body.timestamp_us), true),
        EntryPayload::Normal(p) => (Entry { id, leader, body: p.body.clone(), messages: p.messages.clone() }, false),
    }
}

/// The raft entry a qlog entry was stored from.
pub fn to_raft_entry(e: Entry) -> RaftEntry {
    let log_id = to_raft(e.id, e.leader).expect("a stored entry's index is at least 1");
    let payload = match e.body.effects.as_slice() {
        [] if e.messages.is_empty() => EntryPayload::Blank,
        [Effect::Membership(m)] => EntryPayload::Membership(raft_membership(m)),
        _ => EntryPayload::Normal(Proposed { planned: e.id, body: e.body, messages: e.messages }),
    };
    RaftEntry { log_id, payload }
}
