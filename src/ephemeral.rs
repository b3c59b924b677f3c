//! Ephemeral queues: rings in this process's memory, with leases and acks
//! like durable queues but nothing written to the qlog. Their declarations
//! (`configure`) are durable, kept as KV rows in namespace `queen-ephemeral`;
//! their contents are lost on restart by design.

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const QUEUE_MODE: &str = "__QUEUE_MODE__";
const DEFAULT_PARTITION: &str = "Default";

/// The largest batch a window may wait for.
const MAX_WINDOW_COUNT: u64 = 10_000;

#[derive(Debug, Clone, PartialEq)]
pub struct EphOptions {
    pub max_bytes: u64,
    pub max_length: u64,
    pub drop_oldest: bool,
    pub ttl: Option<Duration>,
    pub lease: Duration,
    pub retry_limit: u32,
    /// `windowBuffer: {ms, count}`: a waiting pop that finds fewer than
    /// `count` messages waits up to `ms` for more, to answer a fuller batch.
    pub window: Option<(Duration, usize)>,
}

impl Default for EphOptions {
    fn default() -> Self {
        Self {
            max_bytes: 16 << 20,
            max_length: 10_000,
            drop_oldest: false,
            ttl: None,
            lease: Duration::from_secs(30),
            retry_limit: 5,
            window: None,
        }
    }
}

impl EphOptions {
    /// Options from a configure call; what is left out takes its default.
    pub fn parse(given: &Map<String, Value>) -> Result<Self, String> {
        let mut o = Self::default();
        for (k, v) in given {
            let n = || v.as_u64().ok_or_else(|| format!("{k} must be a non-negative integer"));
            match k.as_str() {
                "maxBytes" => {
                    o.max_bytes = Some(n()?).filter(|n| *n > 0).unwrap_or(o.max_bytes).min(Self::default().max_bytes)
                }
                "maxLength" => {
                    o.max_length = Some(n()?).filter(|n| *n > 0).unwrap_or(o.max_length).min(Self::default().max_length)
                }
                "policy" => {
                    o.drop_oldest = match v.as_str() {
                        Some("reject") => false,
                        Some("dropOldest") => true,
                        _ => return Err("policy must be reject or dropOldest".into()),
                    }
                }
                "ttlSeconds" => o.ttl = Some(n()?).filter(|n| *n > 0).map(Duration::from_secs),
                "leaseSeconds" => {
                    o.lease = Duration::from_secs(Some(n()?).filter(|n| *n > 0).unwrap_or(30).min(86_400))
                }
                "retryLimit" => o.retry_limit = n()?.min(1000) as u32,
                "windowBuffer" => {
                    let field = |name: &str| v.get(name).and_then(Value::as_u64);
                    o.window = match (v, field("ms"), field("count")) {
                        (Value::Null, _, _) => None,
                        (_, Some(ms), Some(count)) if ms > 0 && count > 1 => {
                            Some((Duration::from_millis(ms.min(60_000)), count.min(MAX_WINDOW_COUNT) as usize))
                        }
                        (_, Some(_), Some(_)) => None,
                        _ => return Err("windowBuffer is {\"ms\": n, \"count\": n}".into()),
                    }
                }
                other => return Err(format!("unknown option {other}")),
            }
        }
        Ok(o)
    }

    pub fn as_json(&self) -> Value {
        json!({
            "maxBytes": self.max_bytes, "maxLength": self.max_length,
            "policy": if self.drop_oldest { "dropOldest" } else { "reject" },
            "ttlSeconds": self.ttl.map_or(0, |t| t.as_secs()), "leaseSeconds": self.lease.as_secs(),
            "retryLimit": self.retry_limit,
            "windowBuffer": self.window.map(|(ms, count)| json!({"ms": ms.as_millis() as u64, "count": count})),
        })
    }
}

struct Message {
    seq: u64,
    at: Instant,
    payload: Value,
    bytes: u64,
}

/// A group's place in a ring.
#[derive(Default)]
struct Cursor {
    /// The next sequence number never delivered.
    next: u64,
    /// Delivered, failed or expired: delivered again before new ones.
    redeliver: BTreeSet<u64>,
    /// seq → (lease expiry, deliveries so far).
    leased: BTreeMap<u64, (Instant, u32)>,
    attempts: HashMap<u64, u32>,
}

#[derive(Default)]
struct Ring {
    next_seq: u64,
    messages: VecDeque<Message>,
    bytes: u64,
    cursors: HashMap<String, Cursor>,
}

#[derive(Default)]
struct Queue {
    options: EphOptions,
    declared: bool,
    rings: BTreeMap<String, Ring>,
    /// The last push, pop or ack: an implicit queue idle for long, and empty, is collected.
    last_used: Option<Instant>,
}

/// Why a push was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum PushRefused {
    QueueFull,
}

/// The outcome of one ack, from the client's closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    Acked,
    Redelivered,
    Stale,
    Unknown,
}

pub struct Ephemeral {
    epoch: String,
    queues: Mutex<HashMap<String, Queue>>,
    /// Woken by every push and redelivery, for waiting pops.
    pub changed: tokio::sync::Notify,
}

impl Default for Ephemeral {
    fn default() -> Self {
        Self { epoch: format!("{:08x}", rand_epoch()), queues: Mutex::default(), changed: tokio::sync::Notify::new() }
    }
}

fn rand_epoch() -> u32 {
    (uuid::Uuid::new_v4().as_u128() & 0xffff_ffff) as u32
}

impl Ring {
    /// Moves expired leases back to redelivery and drops messages past their TTL.
    fn settle(&mut self, now: Instant, options: &EphOptions) {
        for c in self.cursors.values_mut() {
            let expired: Vec<u64> = c.leased.iter().filter(|(_, (e, _))| *e <= now).map(|(s, _)| *s).collect();
            for s in expired {
                let (_, attempts) = c.leased.remove(&s).expect("listed above");
                c.attempts.insert(s, attempts);
                c.redeliver.insert(s);
            }
        }
        if let Some(ttl) = options.ttl {
            while self.messages.front().is_some_and(|m| now.duration_since(m.at) > ttl) {
                self.pop_front();
            }
        }
    }

    fn pop_front(&mut self) {
        if let Some(m) = self.messages.pop_front() {
            self.bytes -= m.bytes;
        }
    }

    fn message(&self, seq: u64) -> Option<&Message> {
        let first = self.messages.front()?.seq;
        self.messages.get(seq.checked_sub(first)? as usize)
    }

    /// Frees messages every cursor has passed, with nothing leased or due again.
    fn collect(&mut self) {
        let Some(low) = self
            .cursors
            .values()
            .map(|c| {
                [Some(c.next), c.redeliver.first().copied(), c.leased.keys().next().copied()]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(c.next)
            })
            .min()
        else {
            return;
        };
        while self.messages.front().is_some_and(|m| m.seq < low) {
            self.pop_front();
        }
    }
}

impl Ephemeral {
    pub fn declare(&self, name: &str, options: EphOptions) {
        let mut queues = self.queues.lock().expect("ephemeral lock");
        let q = queues.entry(name.to_string()).or_default();
        q.options = options;
        q.declared = true;
    }

    /// Drops every message, lease and cursor position; answers how many messages went.
    pub fn reset(&self, name: &str) -> usize {
        let mut queues = self.queues.lock().expect("ephemeral lock");
        let Some(q) = queues.get_mut(name) else { return 0 };
        let mut dropped = 0;
        for ring in q.rings.values_mut() {
            dropped += ring.messages.len();
            ring.messages.clear();
            ring.bytes = 0;
            for c in ring.cursors.values_mut() {
                *c = Cursor { next: ring.next_seq, ..Default::default() };
            }
        }
        dropped
    }

    /// Removes the queue; answers (whether it existed, whether it was declared).
    /// Drops the implicit queues (created by a push or pop, never declared)
    /// that hold no message and no lease and were not used for `idle`;
    /// answers how many went. A declared queue stays until it is deleted.
    pub fn collect_idle(&self, idle: Duration) -> usize {
        let now = Instant::now();
        let mut queues = self.queues.lock().expect("ephemeral lock");
        let before = queues.len();
        queues.retain(|_, q| {
            let quiet = q.last_used.is_none_or(|t| now.duration_since(t) >= idle);
            let empty =
                q.rings.values().all(|r| r.messages.is_empty() && r.cursors.values().all(|c| c.leased.is_empty()));
            q.declared || !quiet || !empty
        });
        before - queues.len()
    }

    pub fn delete(&self, name: &str) -> (bool, bool) {
        match self.queues.lock().expect("ephemeral lock").remove(name) {
            Some(q) => (true, q.declared),
            None => (false, false),
        }
    }

    pub fn push(&self, name: &str, partition: Option<&str>, payloads: Vec<Value>) -> Result<usize, PushRefused> {
        let now = Instant::now();
        let mut queues = self.queues.lock().expect("ephemeral lock");
        let q = queues.entry(name.to_string()).or_default();
        q.last_used = Some(now);
        let options = q.options.clone();
        let ring = q.rings.entry(partition.unwrap_or(DEFAULT_PARTITION).to_string()).or_default();
        ring.settle(now, &options);
        let sizes: Vec<u64> = payloads.iter().map(|p| p.to_string().len() as u64).collect();
        let (add_n, add_bytes) = (payloads.len() as u64, sizes.iter().sum::<u64>());
        let fits = |r: &Ring| {
            r.messages.len() as u64 + add_n <= options.max_length && r.bytes + add_bytes <= options.max_bytes
        };
        while !fits(ring) && options.drop_oldest && !ring.messages.is_empty() {
            ring.pop_front();
        }
        if !fits(ring) {
            return Err(PushRefused::QueueFull);
        }
        for (payload, bytes) in payloads.into_iter().zip(sizes) {
            let seq = ring.next_seq;
            ring.next_seq += 1;
            ring.bytes += bytes;
            ring.messages.push_back(Message { seq, at: now, payload, bytes });
        }
        drop(queues);
        self.changed.notify_waiters();
        Ok(add_n as usize)
    }

    /// The queue's `windowBuffer`, if it has one.
    pub fn window(&self, name: &str) -> Option<(Duration, usize)> {
        self.queues.lock().expect("ephemeral lock").get(name).and_then(|q| q.options.window)
    }

    /// About how many messages a pop by `group` would find now (leases that
    /// ran out are counted when the pop settles them, not here).
    pub fn waiting(&self, name: &str, partition: Option<&str>, group: &str) -> usize {
        let queues = self.queues.lock().expect("ephemeral lock");
        let Some(q) = queues.get(name) else { return 0 };
        q.rings
            .iter()
            .filter(|(p, _)| partition.is_none_or(|want| want == *p))
            .map(|(_, ring)| {
                let head = ring.messages.front().map_or(ring.next_seq, |m| m.seq);
                match ring.cursors.get(group) {
                    Some(c) => (ring.next_seq - c.next.max(head)) as usize + c.redeliver.len(),
                    None => (ring.next_seq - head) as usize,
                }
            })
            .sum()
    }

    /// Delivers up to `batch` messages to `group`, redeliveries first.
    pub fn pop(&self, name: &str, partition: Option<&str>, group: &str, batch: usize, auto_ack: bool) -> Vec<Value> {
        let now = Instant::now();
        let mut queues = self.queues.lock().expect("ephemeral lock");
        let q = queues.entry(name.to_string()).or_default();
        q.last_used = Some(now);
        let options = q.options.clone();
        if let Some(p) = partition {
            q.rings.entry(p.to_string()).or_default();
        }
        let mut out = Vec::new();
        for (pname, ring) in q.rings.iter_mut() {
            if partition.is_some_and(|p| p != pname) || out.len() >= batch {
                continue;
            }
            ring.settle(now, &options);
            let head = ring.messages.front().map_or(ring.next_seq, |m| m.seq);
            let mut cursor = ring.cursors.remove(group).unwrap_or(Cursor { next: head, ..Default::default() });
            cursor.next = cursor.next.max(head);
            let mut due: Vec<u64> = cursor.redeliver.iter().copied().filter(|s| *s >= head).collect();
            cursor.redeliver.retain(|s| *s >= head);
            due.extend(cursor.next..ring.next_seq);
            for seq in due.into_iter().take(batch - out.len()) {
                cursor.redeliver.remove(&seq);
                cursor.next = cursor.next.max(seq + 1);
                let attempts = cursor.attempts.remove(&seq).unwrap_or(0) + 1;
                // Out of retries (its leases kept running out): dropped, as
                // ephemeral queues have no dead-letter queue.
                if attempts > options.retry_limit.max(1) {
                    continue;
                }
                let Some(m) = ring.message(seq) else { continue };
                if !auto_ack {
                    cursor.leased.insert(seq, (now + options.lease, attempts));
                }
                out.push(json!({"id": format!("e:{}:{pname}:{seq}", self.epoch), "partition": pname, "attempts": attempts, "payload": m.payload}));
            }
            ring.cursors.insert(group.to_string(), cursor);
            ring.collect();
        }
        out
    }

    pub fn ack(&self, name: &str, group: &str, id: &str, failed: bool) -> AckOutcome {
        let Some(rest) = id.strip_prefix("e:") else { return AckOutcome::Unknown };
        let Some((epoch, rest)) = rest.split_once(':') else { return AckOutcome::Unknown };
        if epoch != self.epoch {
            return AckOutcome::Stale;
        }
        let Some((partition, seq)) = rest.rsplit_once(':') else { return AckOutcome::Unknown };
        let Ok(seq) = seq.parse::<u64>() else { return AckOutcome::Unknown };
        let mut queues = self.queues.lock().expect("ephemeral lock");
        let Some(q) = queues.get_mut(name) else { return AckOutcome::Stale };
        q.last_used = Some(Instant::now());
        let retry_limit = q.options.retry_limit;
        let Some(ring) = q.rings.get_mut(partition) else { return AckOutcome::Unknown };
        let Some(cursor) = ring.cursors.get_mut(group) else { return AckOutcome::Unknown };
        let Some((expires, attempts)) = cursor.leased.remove(&seq) else { return AckOutcome::Unknown };
        if expires <= Instant::now() {
            cursor.attempts.insert(seq, attempts);
            cursor.redeliver.insert(seq);
            return AckOutcome::Unknown;
        }
        let outcome = if failed && attempts < retry_limit.max(1) {
            cursor.attempts.insert(seq, attempts);
            cursor.redeliver.insert(seq);
            AckOutcome::Redelivered
        } else {
            AckOutcome::Acked
        };
        ring.collect();
        drop(queues);
        if outcome == AckOutcome::Redelivered {
            self.changed.notify_waiters();
        }
        outcome
    }

    pub fn list(&self) -> Value {
        let queues = self.queues.lock().expect("ephemeral lock");
        let mut names: Vec<&String> = queues.keys().collect();
        names.sort();
        let rows: Vec<Value> = names
            .iter()
            .map(|n| {
                let q = &queues[*n];
                json!({
                    "queue": n, "tier": if q.declared { "declared" } else { "implicit" },
                    "depth": q.rings.values().map(|r| r.messages.len()).sum::<usize>(),
                    "bytes": q.rings.values().map(|r| r.bytes).sum::<u64>(),
                    "partitions": q.rings.len(), "options": q.options.as_json(),
                })
            })
            .collect();
        json!({"count": rows.len(), "queues": rows})
    }

    /// The backlog of a queue, or none when there is no such queue.
    pub fn depth(&self, name: &str) -> Option<Value> {
        let queues = self.queues.lock().expect("ephemeral lock");
        let q = queues.get(name)?;
        let parts: Vec<Value> = q
            .rings
            .iter()
            .map(|(p, r)| {
                let pending = r
                    .cursors
                    .values()
                    .map(|c| r.next_seq.saturating_sub(c.next) as usize + c.redeliver.len())
                    .max()
                    .unwrap_or(r.messages.len());
                json!({"partition": p, "pending": pending, "bytes": r.bytes})
            })
            .collect();
        let pending: u64 = parts.iter().map(|p| p["pending"].as_u64().unwrap_or(0)).sum();
        Some(json!({
            "queue": name, "group": null, "tier": if q.declared { "declared" } else { "implicit" },
            "pending": pending, "partitionsPending": parts.iter().filter(|p| p["pending"].as_u64() > Some(0)).count(),
            "bytes": q.rings.values().map(|r| r.bytes).sum::<u64>(), "partitions": parts,
        }))
    }
}
