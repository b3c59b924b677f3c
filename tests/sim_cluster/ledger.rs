//! What the whole cluster did, as the checks need it: the entry applied at
//! each index (the first node to apply it sets it, and every other node
//! must apply the same), the entries clients were answered `Applied` for,
//! and the leaderships each node took. A broken rule is kept as a
//! violation for the run to report, since it is found inside openraft's
//! tasks, where a panic would be caught and lost.

use queen::seams::raft::{to_qlog_entry, RaftEntry, RaftLogId};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Ledger(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// Raft index → the log id and a digest of the entry applied there.
    applied: BTreeMap<u64, (RaftLogId, u64)>,
    /// Raft index → the log id of an entry a client was answered for.
    answered: BTreeMap<u64, RaftLogId>,
    /// Term → the nodes that led in it, in the order they took it.
    leaders: BTreeMap<u64, Vec<u64>>,
    violations: Vec<String>,
}

/// A digest of what an entry holds, as the qlog stores it: its message
/// records in their stored bytes, where a Kafka batch has its base offset
/// (the copy a leader planned has it in place only once written, and one
/// read back from a log has it already).
fn digest(entry: &RaftEntry) -> u64 {
    let mut h = DefaultHasher::new();
    let (qlog, blank) = to_qlog_entry(entry);
    format!("{:?} {:?} {:?} {blank}", qlog.id, qlog.leader, qlog.body).hash(&mut h);
    for record in &qlog.messages {
        let mut stored = Vec::new();
        record.encode_into(&mut stored);
        stored.hash(&mut h);
    }
    h.finish()
}

impl Ledger {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().expect("ledger lock")
    }

    /// Node `node` applies `entry`.
    pub fn applied(&self, node: u64, entry: &RaftEntry) {
        let (id, digest) = (entry.log_id, digest(entry));
        let mut s = self.state();
        match s.applied.get(&id.index).copied() {
            Some((first, d)) if (first, d) != (id, digest) => s.violations.push(format!(
                "node {node} applied {id} (digest {digest:x}) at index {}, where {first} (digest {d:x}) was applied \
                 before: two nodes applied different entries at one index",
                id.index
            )),
            Some(_) => {}
            None => {
                let before = id.index.checked_sub(1).and_then(|i| s.applied.get(&i)).map(|(b, _)| *b);
                if let Some(b) = before.filter(|b| b.leader_id > id.leader_id) {
                    s.violations.push(format!("committed entry {id} follows {b}, of a later leader"));
                }
                s.applied.insert(id.index, (id, digest));
            }
        }
    }

    /// A client was answered that the entry at `id` applied.
    pub fn answered(&self, id: RaftLogId) {
        let mut s = self.state();
        match s.applied.get(&id.index) {
            Some((applied, _)) if *applied == id => {}
            other => {
                let other = other.map(|(a, _)| a.to_string());
                s.violations.push(format!("a client was answered for {id}, and the ledger holds {other:?} there"));
            }
        }
        s.answered.insert(id.index, id);
    }

    /// Node `node` leads in `term`. openraft's leader ids are (term, node)
    /// (`leader_id_adv`): a term may have more than one leader, counted.
    pub fn leads(&self, node: u64, term: u64) {
        // The order in which a term's leaders take it proves nothing: a
        // vote granted to a lower leader id before a higher one may reach
        // its candidate after the higher one leads (held across a cut, seed
        // 377 of the partition plan), and that leader can commit nothing.
        // What safety asks is checked by the entries: one per index.
        let mut s = self.state();
        let leaders = s.leaders.entry(term).or_default();
        if !leaders.contains(&node) {
            leaders.push(node);
        }
    }

    /// The violations found so far.
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    /// Every entry applied anywhere, by index: the committed log.
    pub fn committed(&self) -> BTreeMap<u64, RaftLogId> {
        self.state().applied.iter().map(|(i, (id, _))| (*i, *id)).collect()
    }

    /// How many entries clients were answered for.
    pub fn answered_count(&self) -> usize {
        self.state().answered.len()
    }

    /// Terms, and how many of them had more than one leader.
    pub fn terms(&self) -> (usize, usize) {
        let s = self.state();
        (s.leaders.len(), s.leaders.values().filter(|l| l.iter().collect::<BTreeSet<_>>().len() > 1).count())
    }
}
