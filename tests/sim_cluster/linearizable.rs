//! A linearizability checker for one register: the history of one KV key.
//!
//! The simulator's KV workload sends reads, writes and conditional writes to
//! every key from many clients at once, to nodes the seed picks, while the
//! network partitions and loses messages and nodes crash. Checking each answer
//! against "the last write" is not enough there: concurrent operations may
//! take effect in either order, and a write whose answer was lost may have
//! applied, late, or never. What the cluster owes its clients is
//! linearizability: every answered operation took effect atomically at one
//! point between when it was sent and when its answer came, and the answers
//! are those of a single register applying the operations in that order. An
//! operation without an answer may have taken effect at any point after it was
//! sent, or never; we count it as possibly applied, so a lost answer never
//! makes a correct history fail, and a lost write can still explain a read of
//! its value.
//!
//! The search is Wing & Gong's, with Lowe's memo: it builds a linearization
//! one operation at a time, only ever placing next an operation that was
//! invoked before the earliest answer among the answered operations not yet
//! placed (anything invoked later must come after that one). Which operations
//! are placed and what the register holds is all that decides how the search
//! can go on, so each such configuration is explored once.
//!
//! Unanswered operations are what makes this costly: they never have to be
//! placed and stay candidates to the end, so the configurations multiply with
//! the subsets of them used up. Two things keep that down. A configuration
//! that places a subset of another's unanswered operations, and is otherwise
//! the same, can do all the other can; so the search explores configurations
//! in order of how many unanswered operations they place (fewest first, each
//! count depth first from explicit stacks), and skips any that such a one
//! dominates. And it never places an unanswered operation where it would make
//! no difference (it changes nothing, or the next operation comes out the same
//! without it), nor a later one of two identical unanswered operations before
//! the earlier. That keeps histories of a few hundred operations, a handful
//! concurrent at a time and some answers lost, to thousands of states, passed
//! or failed. The search is still bounded, and reaching the bound is an error,
//! so a blow-up of the checker shows instead of passing a history it never
//! finished checking.

use std::collections::HashMap;

/// How many configurations `check` explores before giving up.
const STATES: usize = 5_000_000;

/// How many of the operations that could not be placed a failure lists.
const WITNESSES: usize = 8;

/// One operation on one register, as a client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A read that answered the register's value (None: absent).
    Read(Option<String>),
    /// An unconditional write of a value.
    Write(String),
    /// A conditional operation: applies only when the register holds `expect`
    /// (None: absent); when it applies and `value` is Some, the register then holds it
    /// (`value` None is a pure check that writes nothing). `applied` is what the
    /// client was answered: Some(true) applied, Some(false) refused (the register did
    /// not hold `expect` at its linearization point), None: outcome unknown.
    Cond { expect: Option<String>, value: Option<String>, applied: Option<bool> },
}

#[derive(Debug, Clone)]
pub struct Event {
    pub op: Op,
    /// A point of a total order of real time (a sequence number of the
    /// simulation's events): when the call was sent.
    pub invoked: u64,
    /// When the answer came; None when it never came (timed out, lost): such an
    /// operation may have taken effect at any point after `invoked`, or never.
    pub returned: Option<u64>,
}

/// Checks that `history` (all operations on one key, in any order) is linearizable
/// for a register that starts as `initial`. Err names the key, says the history is not
/// linearizable, and gives a witness: the operations that could not be placed after
/// the longest linearizable prefix found (show op, invoked, returned), in a few lines.
pub fn check(key: &str, initial: Option<String>, history: &[Event]) -> Result<(), String> {
    search(key, initial, history, STATES).map(|_| ())
}

/// An operation as the search sees it, its values replaced by small numbers
/// (0: absent), so a configuration hashes as a few words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    Read(u32),
    Write(u32),
    Cond { expect: u32, value: Option<u32>, applied: Option<bool> },
}

impl Step {
    /// What the register holds after this operation takes effect on `state`;
    /// None when the operation's answer rules out taking effect there.
    fn apply(self, state: u32) -> Option<u32> {
        match self {
            Step::Read(seen) => (seen == state).then_some(state),
            Step::Write(value) => Some(value),
            Step::Cond { expect, value, applied } => {
                let holds = expect == state;
                match applied {
                    // Answered the other way than the register allows here.
                    Some(answered) if answered != holds => None,
                    // Applied (as answered, or with the outcome unknown, where
                    // the register alone decides it).
                    _ if holds => Some(value.unwrap_or(state)),
                    _ => Some(state),
                }
            }
        }
    }
}

/// One operation of the history the search has to place (or may place).
struct Entry<'a> {
    step: Step,
    invoked: u64,
    /// None: never answered, so never required.
    returned: Option<u64>,
    event: &'a Event,
    /// Its bit among the answered operations, or among the unanswered ones.
    bit: usize,
    /// For an unanswered operation, the one invoked before it that is the
    /// same operation, if any.
    twin: Option<usize>,
}

impl Entry<'_> {
    fn answered(&self) -> bool {
        self.returned.is_some()
    }
}

/// The values of a history, numbered from 1 (0 is absent).
#[derive(Default)]
struct Values<'a> {
    ids: HashMap<&'a str, u32>,
    names: Vec<&'a str>,
}

impl<'a> Values<'a> {
    fn id(&mut self, value: Option<&'a str>) -> u32 {
        let Some(value) = value else { return 0 };
        let next = self.names.len() as u32 + 1;
        *self.ids.entry(value).or_insert_with(|| {
            self.names.push(value);
            next
        })
    }

    fn name(&self, id: u32) -> Option<&'a str> {
        id.checked_sub(1).map(|i| self.names[i as usize])
    }
}

fn has(set: &[u64], bit: usize) -> bool {
    set[bit / 64] & (1 << (bit % 64)) != 0
}

fn flip(set: &mut [u64], bit: usize) {
    set[bit / 64] ^= 1 << (bit % 64);
}

/// Whether every bit of `a` is in `b`.
fn subset(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(a, b)| a & !b == 0)
}

/// Where the search stands: which answered operations are placed, then in
/// one more word what the register holds; and apart, which unanswered ones.
/// The first part decides what may come next; of two configurations alike in
/// it, the one with fewer unanswered operations placed can do everything the
/// other can, and more.
#[derive(Clone)]
struct Config {
    answered: Vec<u64>,
    unanswered: Vec<u64>,
}

impl Config {
    fn new(answered: usize, unanswered: usize, state: u32) -> Config {
        let mut config =
            Config { answered: vec![0; answered.div_ceil(64) + 1], unanswered: vec![0; unanswered.div_ceil(64)] };
        config.set_state(state);
        config
    }

    fn placed(&self, entry: &Entry) -> bool {
        if entry.answered() {
            has(&self.answered, entry.bit)
        } else {
            has(&self.unanswered, entry.bit)
        }
    }

    fn flip(&mut self, entry: &Entry) {
        if entry.answered() {
            flip(&mut self.answered, entry.bit)
        } else {
            flip(&mut self.unanswered, entry.bit)
        }
    }

    fn state(&self) -> u32 {
        // Only ever set from a u32.
        self.answered[self.answered.len() - 1] as u32
    }

    fn set_state(&mut self, state: u32) {
        let last = self.answered.len() - 1;
        self.answered[last] = u64::from(state);
    }

    /// The earliest answer among the answered operations not placed (None:
    /// all are): only an operation invoked before it may be placed next.
    fn bound(&self, entries: &[Entry], by_return: &[usize]) -> Option<u64> {
        by_return.iter().find(|&&i| !self.placed(&entries[i])).and_then(|&i| entries[i].returned)
    }
}

/// The configurations reached, none dominated by another (the same answered
/// operations and state, a subset of the unanswered): each is explored, or
/// waits to be, and none led to a linearization yet.
#[derive(Default)]
struct Memo {
    /// By answered operations and state, the sets of unanswered operations.
    seen: HashMap<Box<[u64]>, Vec<Box<[u64]>>>,
}

impl Memo {
    /// Records `config` unless one reached dominates it; whether it did.
    fn visit(&mut self, config: &Config) -> bool {
        let Some(reached) = self.seen.get_mut(&config.answered[..]) else {
            self.seen.insert(config.answered.clone().into(), vec![config.unanswered.clone().into()]);
            return true;
        };
        if reached.iter().any(|r| subset(r, &config.unanswered)) {
            return false;
        }
        // Whatever those `config` dominates could reach, it can too.
        reached.retain(|r| !subset(&config.unanswered, r));
        reached.push(config.unanswered.clone().into());
        true
    }

    /// Whether `config` is still recorded: not dominated by one reached since.
    fn live(&self, config: &Config) -> bool {
        self.seen.get(&config.answered[..]).is_some_and(|r| r.iter().any(|r| **r == config.unanswered[..]))
    }
}

/// A configuration to explore, and how it was reached.
struct Item {
    config: Config,
    /// How many answered operations it places.
    placed: usize,
    /// When the operation placed last was an unanswered one, what the register held before it.
    from: Option<u32>,
    /// The answered operations before this one in `entries` are all placed.
    early: usize,
    /// And so are those before this one in `by_return`.
    by_answer: usize,
}

fn describe(event: &Event) -> String {
    let returned = event.returned.map_or_else(|| "never".to_string(), |r| r.to_string());
    format!("{:?} invoked {} returned {returned}", event.op, event.invoked)
}

/// The longest linearizable prefix found (the first that places the most
/// answered operations): how many answered operations it places, where it
/// ends, and the operation it placed last.
struct Best {
    placed: usize,
    config: Config,
    last: Option<usize>,
}

/// `check`, exploring at most `limit` configurations; Ok holds how many it
/// explored.
fn search(key: &str, initial: Option<String>, history: &[Event], limit: usize) -> Result<usize, String> {
    let mut values = Values::default();
    let start = values.id(initial.as_deref());
    let mut entries = Vec::with_capacity(history.len());
    for event in history {
        if event.returned.is_some_and(|returned| returned <= event.invoked) {
            return Err(format!("key {key:?}: an operation returned before it was invoked: {}", describe(event)));
        }
        let pending = event.returned.is_none();
        let step = match &event.op {
            // An operation without an answer that writes nothing leaves the
            // register the same whether it took effect or not, and nothing
            // requires placing it: leaving it out changes no outcome.
            Op::Read(_) | Op::Cond { value: None, .. } | Op::Cond { applied: Some(false), .. } if pending => continue,
            Op::Read(seen) => Step::Read(values.id(seen.as_deref())),
            Op::Write(value) => Step::Write(values.id(Some(value))),
            Op::Cond { expect, value, applied } => Step::Cond {
                expect: values.id(expect.as_deref()),
                value: value.as_deref().map(|v| values.id(Some(v))),
                applied: *applied,
            },
        };
        entries.push(Entry { step, invoked: event.invoked, returned: event.returned, event, bit: 0, twin: None });
    }
    // The answered operations first, then the unanswered, each in invocation
    // order: the candidates at each step are a prefix of each part.
    entries.sort_by_key(|e| (!e.answered(), e.invoked));
    let (mut answered, mut unanswered) = (0, 0);
    let mut last_of: HashMap<Step, usize> = HashMap::new();
    for (i, entry) in entries.iter_mut().enumerate() {
        if entry.answered() {
            entry.bit = answered;
            answered += 1;
        } else {
            entry.bit = unanswered;
            unanswered += 1;
            entry.twin = last_of.insert(entry.step, i);
        }
    }
    let n = entries.len();
    // The answered operations by answer, for `Config::bound`.
    let mut by_return: Vec<usize> = (0..answered).collect();
    by_return.sort_by_key(|&i| entries[i].returned);

    let root = Item { config: Config::new(answered, unanswered, start), placed: 0, from: None, early: 0, by_answer: 0 };
    let mut memo = Memo::default();
    memo.visit(&root.config);
    let mut best = Best { placed: 0, config: root.config.clone(), last: None };
    // By how many unanswered operations they place, the configurations to
    // explore.
    let mut stacks = vec![vec![root]];
    let mut explored = 0;
    let mut count = 0;
    while count < stacks.len() {
        while let Some(item) = stacks[count].pop() {
            if !memo.live(&item.config) {
                continue;
            }
            let Item { mut config, placed, from, mut early, mut by_answer } = item;
            // Everything before these is placed (on the way here, too).
            while early < answered && config.placed(&entries[early]) {
                early += 1;
            }
            while by_return.get(by_answer).is_some_and(|&i| config.placed(&entries[i])) {
                by_answer += 1;
            }
            let Some(bound) = by_return.get(by_answer).and_then(|&i| entries[i].returned) else {
                // Every answered operation is placed.
                return Ok(explored);
            };
            explored += 1;
            if explored > limit {
                return Err(format!(
                    "key {key:?}: the linearizability check of {n} operations was abandoned after exploring {limit} \
                     states, so the history is neither passed nor failed"
                ));
            }
            let state = config.state();
            let answered_ones = (early..answered).take_while(|&i| entries[i].invoked < bound);
            let unanswered_ones = (answered..n).take_while(|&i| entries[i].invoked < bound);
            for i in answered_ones.chain(unanswered_ones) {
                let entry = &entries[i];
                if config.placed(entry) {
                    continue;
                }
                // Of the same unanswered operation sent more than once, the
                // first sent can stand wherever a later one can: place them
                // in order.
                if entry.twin.is_some_and(|t| !config.placed(&entries[t])) {
                    continue;
                }
                let Some(after) = entry.step.apply(state) else { continue };
                // An unanswered operation that changes nothing is better left
                // out (to place later, if at all).
                if !entry.answered() && after == state {
                    continue;
                }
                // Right after an unanswered operation, only an operation it
                // makes a difference to: were the next one to leave the
                // register the same either way (an unconditional write, say),
                // the unanswered one would be pointless, and the same
                // linearization without it is tried from before it.
                if from.is_some_and(|before| entry.step.apply(before) == Some(after)) {
                    continue;
                }
                // Tried in place, and copied only when new.
                config.flip(entry);
                config.set_state(after);
                let next = memo.visit(&config).then(|| config.clone());
                config.flip(entry);
                config.set_state(state);
                let Some(next) = next else { continue };
                let placed = placed + usize::from(entry.answered());
                if placed > best.placed {
                    best = Best { placed, config: next.clone(), last: Some(i) };
                }
                let (to, from) = if entry.answered() { (count, None) } else { (count + 1, Some(state)) };
                if stacks.len() == to {
                    stacks.push(Vec::new());
                }
                stacks[to].push(Item { config: next, placed, from, early, by_answer });
            }
        }
        count += 1;
    }
    Err(witness(key, &entries, &values, &by_return, &best))
}

/// Why the history is not linearizable: where the longest linearizable prefix
/// found ends, and the operations that could come next there (answered ones
/// first), none of which leads to a linearization.
fn witness(key: &str, entries: &[Entry], values: &Values, by_return: &[usize], best: &Best) -> String {
    let Best { placed, config, last } = best;
    let bound = config.bound(entries, by_return).unwrap_or(u64::MAX);
    // Answered first: they are in `entries` first.
    let candidates: Vec<&Entry> = entries.iter().filter(|e| e.invoked < bound && !config.placed(e)).collect();
    let state = config.state();
    let last = last.map_or_else(String::new, |i| format!(", the last {}", describe(entries[i].event)));
    let unanswered = config.unanswered.iter().map(|w| w.count_ones()).sum::<u32>();
    let mut out = format!(
        "key {key:?}: the history of {} operations is not linearizable: after the longest linearizable prefix found \
         ({placed} answered operations and {unanswered} unanswered{last}) the register holds {:?}, and none of \
         these can be placed next:",
        entries.len(),
        values.name(state),
    );
    for entry in candidates.iter().take(WITNESSES) {
        let why = match entry.step.apply(state) {
            None => "contradicts that value",
            Some(_) => "fits, but then the rest cannot be placed",
        };
        out.push_str(&format!("\n  {} ({why})", describe(entry.event)));
    }
    if candidates.len() > WITNESSES {
        out.push_str(&format!("\n  ... and {} more", candidates.len() - WITNESSES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    fn ev(op: Op, invoked: u64, returned: u64) -> Event {
        Event { op, invoked, returned: Some(returned) }
    }

    fn lost(op: Op, invoked: u64) -> Event {
        Event { op, invoked, returned: None }
    }

    fn read(v: Option<&str>) -> Op {
        Op::Read(v.map(str::to_string))
    }

    fn write(v: &str) -> Op {
        Op::Write(v.to_string())
    }

    fn cond(expect: Option<&str>, value: Option<&str>, applied: Option<bool>) -> Op {
        Op::Cond { expect: expect.map(str::to_string), value: value.map(str::to_string), applied }
    }

    #[test]
    fn a_sequential_history_passes() {
        let history = [
            ev(read(None), 0, 1),
            ev(write("a"), 2, 3),
            ev(read(Some("a")), 4, 5),
            ev(cond(Some("a"), Some("b"), Some(true)), 6, 7),
            ev(read(Some("b")), 8, 9),
            ev(cond(Some("a"), Some("c"), Some(false)), 10, 11),
            ev(read(Some("b")), 12, 13),
        ];
        assert_eq!(check("k", None, &history), Ok(()));
        // The order the history comes in does not matter.
        let reversed: Vec<Event> = history.iter().rev().cloned().collect();
        assert_eq!(check("k", None, &reversed), Ok(()));
    }

    #[test]
    fn a_stale_read_after_a_completed_write_fails() {
        let history = [ev(write("a"), 0, 1), ev(write("b"), 2, 3), ev(read(Some("a")), 4, 5)];
        let err = check("k7", None, &history).unwrap_err();
        assert!(err.contains("\"k7\""), "{err}");
        assert!(err.contains("not linearizable"), "{err}");
        assert!(err.contains("Read(Some(\"a\")) invoked 4 returned 5"), "{err}");
        assert!(err.contains("holds Some(\"b\")"), "{err}");
        // The stale read alone, against the initial value, too.
        assert!(check("k", s("x"), &[ev(write("a"), 0, 1), ev(read(Some("x")), 2, 3)]).is_err());
    }

    #[test]
    fn a_read_concurrent_with_a_write_passes_either_way() {
        for seen in [None, Some("a")] {
            let history = [ev(write("a"), 0, 3), ev(read(seen), 1, 2)];
            assert_eq!(check("k", None, &history), Ok(()), "{seen:?}");
        }
        // But not a value nobody wrote.
        assert!(check("k", None, &[ev(write("a"), 0, 3), ev(read(Some("b")), 1, 2)]).is_err());
        // Two reads in real-time order cannot see the write undone.
        let history = [ev(write("a"), 0, 10), ev(read(Some("a")), 1, 2), ev(read(None), 3, 4)];
        assert!(check("k", None, &history).is_err());
    }

    #[test]
    fn a_write_without_an_answer_may_have_applied_or_not() {
        // It explains a read of its value, long after it was sent.
        assert_eq!(check("k", None, &[lost(write("a"), 0), ev(read(Some("a")), 50, 51)]), Ok(()));
        // Or it never applied.
        assert_eq!(check("k", None, &[lost(write("a"), 0), ev(read(None), 50, 51)]), Ok(()));
        // But not before it was sent.
        assert!(check("k", None, &[ev(read(Some("a")), 0, 1), lost(write("a"), 2)]).is_err());
        // And once seen applied, it stays applied.
        let history = [lost(write("a"), 0), ev(read(Some("a")), 5, 6), ev(read(None), 7, 8)];
        assert!(check("k", None, &history).is_err());
        // It may land after a later answered write, overwriting it.
        let history = [lost(write("a"), 0), ev(write("b"), 5, 6), ev(read(Some("a")), 7, 8)];
        assert_eq!(check("k", None, &history), Ok(()));
        // It takes effect once: not both before and after another write.
        let history =
            [lost(write("a"), 0), ev(read(Some("a")), 5, 6), ev(write("b"), 7, 8), ev(read(Some("a")), 9, 10)];
        assert!(check("k", None, &history).is_err());
        // Two of them can.
        let mut twice = history.to_vec();
        twice.push(lost(write("a"), 1));
        assert_eq!(check("k", None, &twice), Ok(()));
        // A read without an answer tells nothing.
        assert_eq!(check("k", None, &[lost(read(Some("zzz")), 0), ev(read(None), 1, 2)]), Ok(()));
    }

    #[test]
    fn a_refused_cond_whose_expect_held_throughout_fails() {
        assert!(check("k", s("a"), &[ev(cond(Some("a"), Some("b"), Some(false)), 0, 1)]).is_err());
        let history =
            [ev(write("a"), 0, 1), ev(cond(Some("a"), Some("b"), Some(false)), 2, 3), ev(read(Some("a")), 4, 5)];
        let err = check("k", None, &history).unwrap_err();
        assert!(err.contains("applied: Some(false)"), "{err}");
        // A concurrent write may have changed the register first.
        let history = [ev(write("a"), 0, 1), ev(write("c"), 2, 5), ev(cond(Some("a"), Some("b"), Some(false)), 3, 4)];
        assert_eq!(check("k", None, &history), Ok(()));
        // Refused on absence: expect None while the key holds a value.
        assert_eq!(check("k", s("a"), &[ev(cond(None, Some("b"), Some(false)), 0, 1)]), Ok(()));
        assert!(check("k", None, &[ev(cond(None, Some("b"), Some(false)), 0, 1)]).is_err());
    }

    #[test]
    fn an_applied_cond_passes_and_writes() {
        let history =
            [ev(write("a"), 0, 1), ev(cond(Some("a"), Some("b"), Some(true)), 2, 3), ev(read(Some("b")), 4, 5)];
        assert_eq!(check("k", None, &history), Ok(()));
        // Create if absent.
        let history = [ev(cond(None, Some("b"), Some(true)), 0, 1), ev(read(Some("b")), 2, 3)];
        assert_eq!(check("k", None, &history), Ok(()));
        // Applied where its expect never held.
        assert!(check("k", s("x"), &[ev(cond(Some("a"), Some("b"), Some(true)), 0, 1)]).is_err());
        // Applied, but its write is not seen after it.
        let history =
            [ev(write("a"), 0, 1), ev(cond(Some("a"), Some("b"), Some(true)), 2, 3), ev(read(Some("a")), 4, 5)];
        assert!(check("k", None, &history).is_err());
    }

    #[test]
    fn a_cond_with_an_unknown_outcome_follows_the_register() {
        // Its expect held, so it applied.
        let history = [ev(cond(Some("a"), Some("b"), None), 0, 1), ev(read(Some("b")), 2, 3)];
        assert_eq!(check("k", s("a"), &history), Ok(()));
        let history = [ev(cond(Some("a"), Some("b"), None), 0, 1), ev(read(Some("a")), 2, 3)];
        assert!(check("k", s("a"), &history).is_err());
        // Its expect did not hold, so it did not.
        let history = [ev(cond(Some("x"), Some("b"), None), 0, 1), ev(read(Some("a")), 2, 3)];
        assert_eq!(check("k", s("a"), &history), Ok(()));
        // Without an answer, it may have applied later or never.
        for seen in ["a", "b"] {
            let history = [lost(cond(Some("a"), Some("b"), None), 0), ev(read(Some(seen)), 5, 6)];
            assert_eq!(check("k", s("a"), &history), Ok(()), "{seen}");
        }
    }

    #[test]
    fn a_check_writes_nothing() {
        let history = [ev(cond(Some("a"), None, Some(true)), 0, 1), ev(read(Some("a")), 2, 3)];
        assert_eq!(check("k", s("a"), &history), Ok(()));
        assert!(check("k", s("a"), &[ev(cond(Some("b"), None, Some(true)), 0, 1)]).is_err());
        assert_eq!(check("k", s("a"), &[ev(cond(Some("b"), None, Some(false)), 0, 1)]), Ok(()));
        assert!(check("k", s("a"), &[ev(cond(Some("a"), None, Some(false)), 0, 1)]).is_err());
        assert_eq!(check("k", None, &[ev(cond(None, None, Some(true)), 0, 1)]), Ok(()));
        // A check that passed pins the value at some point of its span.
        let history = [ev(write("a"), 0, 1), ev(cond(Some("b"), None, Some(true)), 2, 3), ev(write("b"), 4, 5)];
        assert!(check("k", None, &history).is_err());
        let history = [ev(write("a"), 0, 1), ev(cond(Some("b"), None, Some(true)), 2, 6), ev(write("b"), 3, 5)];
        assert_eq!(check("k", None, &history), Ok(()));
    }

    /// A deterministic generator (an LCG), so the tests need nothing but std.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }

        fn value(&mut self) -> Option<String> {
            ["a", "b", "c"].get(self.below(4) as usize).map(|v| v.to_string())
        }
    }

    /// A linearizable history of `ops` operations by construction: each takes
    /// effect at its own point (10 apart) of a span up to 40 either side of
    /// it, so up to eight run at once; some are never answered (and of those,
    /// some never took effect), and some conds' outcomes are unknown.
    fn generated(ops: u64, seed: u64) -> Vec<Event> {
        let mut rng = Rng(seed);
        let mut register = None;
        let mut history = Vec::new();
        for k in 0..ops {
            let at = 100 + 10 * k;
            // Odd invocations and even answers, so none coincide.
            let invoked = at - (2 * rng.below(20) + 1);
            let returned = at + 2 * (rng.below(20) + 1);
            let answered = rng.below(10) != 0;
            let effect = answered || rng.below(2) == 0;
            let op = match rng.below(3) {
                0 => Op::Read(register.clone()),
                1 => {
                    let value = rng.value().unwrap_or_else(|| "d".to_string());
                    if effect {
                        register = Some(value.clone());
                    }
                    Op::Write(value)
                }
                _ => {
                    let expect = rng.value();
                    let value = if rng.below(4) == 0 { None } else { rng.value().or_else(|| s("d")) };
                    let holds = expect == register;
                    if effect && holds && value.is_some() {
                        register = value.clone();
                    }
                    let applied = if !answered || rng.below(5) == 0 { None } else { Some(holds) };
                    Op::Cond { expect, value, applied }
                }
            };
            history.push(Event { op, invoked, returned: answered.then_some(returned) });
        }
        history
    }

    #[test]
    fn a_long_concurrent_history_checks_quickly() {
        let started = Instant::now();
        for seed in 0..5 {
            let history = generated(200, seed);
            let explored = search("k", None, &history, STATES).unwrap();
            // Linear-ish in the history, nowhere near the bound.
            assert!(explored < 20_000, "seed {seed}: {explored} states");
            let reversed: Vec<Event> = history.iter().rev().cloned().collect();
            assert_eq!(check("k", None, &reversed), Ok(()), "seed {seed}");
            // A read of a value never written, late in the history, fails,
            // after a search of every way to order what precedes it (and of
            // the lost answers, every way to count them in or out).
            let mut broken = history.clone();
            let at = broken.iter().rposition(|e| matches!(e.op, Op::Read(_)) && e.returned.is_some()).unwrap();
            broken[at].op = read(Some("never"));
            let err = search("k", None, &broken, 100_000).unwrap_err();
            assert!(err.contains("not linearizable"), "seed {seed}: {err}");
            assert!(err.contains("Read(Some(\"never\"))"), "seed {seed}: {err}");
            assert!(err.lines().count() <= 2 + WITNESSES, "{err}");
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    }

    /// Whether some order of `history` (each answered operation once, each
    /// unanswered one at most once, none before one answered before it was
    /// invoked) gives every answer from a register holding `state`: every
    /// order tried, nothing pruned.
    fn every_order(state: Option<String>, history: &[Event], placed: &mut [bool]) -> bool {
        if history.iter().zip(placed.iter()).all(|(e, &p)| p || e.returned.is_none()) {
            return true;
        }
        for i in 0..history.len() {
            let after_one_left = history
                .iter()
                .zip(placed.iter())
                .any(|(e, &p)| !p && e.returned.is_some_and(|r| r < history[i].invoked));
            if placed[i] || after_one_left {
                continue;
            }
            let next = match &history[i].op {
                Op::Read(seen) => (*seen == state).then(|| state.clone()),
                Op::Write(value) => Some(Some(value.clone())),
                Op::Cond { expect, value, applied } => {
                    let holds = *expect == state;
                    match applied {
                        Some(answered) if *answered != holds => None,
                        _ if holds => Some(value.clone().or_else(|| state.clone())),
                        _ => Some(state.clone()),
                    }
                }
            };
            let Some(next) = next else { continue };
            placed[i] = true;
            let found = every_order(next, history, placed);
            placed[i] = false;
            if found {
                return true;
            }
        }
        false
    }

    #[test]
    fn agrees_with_trying_every_order() {
        // Small random histories, about half of them linearizable, many with
        // lost answers, against the search without memo or pruning.
        let mut rng = Rng(42);
        let pick = |rng: &mut Rng| ["a", "b"].get(rng.below(3) as usize).map(|v| v.to_string());
        let mut linearizable = 0;
        for case in 0..20_000 {
            let n = 1 + rng.below(7) as usize;
            // Distinct times, shuffled, two to an operation.
            let mut times: Vec<u64> = (0..2 * n as u64).collect();
            for i in (1..times.len()).rev() {
                times.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let mut history = Vec::new();
            for pair in times.chunks(2) {
                let op = match rng.below(3) {
                    0 => Op::Read(pick(&mut rng)),
                    1 => Op::Write(pick(&mut rng).unwrap_or_else(|| "c".to_string())),
                    _ => Op::Cond {
                        expect: pick(&mut rng),
                        value: pick(&mut rng),
                        applied: [Some(true), Some(false), None][rng.below(3) as usize],
                    },
                };
                let returned = (rng.below(3) != 0).then_some(pair[0].max(pair[1]));
                history.push(Event { op, invoked: pair[0].min(pair[1]), returned });
            }
            let initial = pick(&mut rng);
            let expected = every_order(initial.clone(), &history, &mut vec![false; n]);
            let got = check("k", initial.clone(), &history);
            assert_eq!(got.is_ok(), expected, "case {case}: {got:?} from {initial:?}: {history:#?}");
            linearizable += usize::from(expected);
        }
        assert!((5_000..15_000).contains(&linearizable), "{linearizable}");
    }

    #[test]
    fn the_search_is_bounded_and_says_so() {
        let history = generated(200, 7);
        let err = search("k3", None, &history, 10).unwrap_err();
        assert!(err.contains("\"k3\"") && err.contains("abandoned"), "{err}");
    }

    #[test]
    fn an_answer_before_the_call_is_refused() {
        assert!(check("k", None, &[ev(read(None), 5, 5)]).is_err());
    }

    #[test]
    fn an_empty_history_passes() {
        assert_eq!(check("k", s("a"), &[]), Ok(()));
        assert_eq!(check("k", None, &[lost(write("a"), 0)]), Ok(()));
    }
}
