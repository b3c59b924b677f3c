//! The dashboard: a web page served at `/`, its assets embedded in the
//! binary at build time (plain HTML, CSS and JavaScript modules in
//! `assets/`; nothing is fetched at run time), and the one read route it
//! adds, `GET /api/v1/dashboard/history`: a short node-local history of
//! throughput, depth and lag, sampled every few seconds in memory (the
//! node-local dashboard rows of storage.md, not written to disk here).
//!
//! The page and its assets are public (the page asks for a token when JWT
//! is on); `router()` merges them after the authentication layer. The
//! history route sits with the API, behind it (`read-only`).

use crate::node::Node;
use crate::planner::command::QUEUE_MODE;
use crate::store::Store;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

/// How often the node samples, and how many samples it keeps (10 minutes).
pub const SAMPLE_EVERY: Duration = Duration::from_secs(2);
pub const SAMPLES_KEPT: usize = 300;
/// The queues a sample keeps per-queue numbers for, the deepest first.
const QUEUES_PER_SAMPLE: usize = 50;

/// (file name, content type, body)
const ASSETS: &[(&str, &str, &str)] = &[
    ("index.html", "text/html; charset=utf-8", include_str!("assets/index.html")),
    ("app.css", "text/css; charset=utf-8", include_str!("assets/app.css")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("assets/app.js")),
    ("api.js", "text/javascript; charset=utf-8", include_str!("assets/api.js")),
    ("plot.js", "text/javascript; charset=utf-8", include_str!("assets/plot.js")),
    ("views.js", "text/javascript; charset=utf-8", include_str!("assets/views.js")),
    ("icon.svg", "image/svg+xml", include_str!("assets/icon.svg")),
];

fn asset(name: &str) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => {
            ([(header::CONTENT_TYPE, *kind), (header::CACHE_CONTROL, "no-cache")], *body).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such dashboard asset").into_response(),
    }
}

/// The public part: the page, its assets, and whether it needs a token.
/// Building it starts the node's sampler (once per node).
pub fn assets(node: &Arc<Node>) -> Router<Arc<Node>> {
    history_of(node);
    Router::new()
        .route("/", get(|| async { asset("index.html") }))
        .route("/dashboard", get(|| async { asset("index.html") }))
        .route("/dashboard/", get(|| async { asset("index.html") }))
        .route("/dashboard/config", get(config))
        .route("/dashboard/{file}", get(|Path(file): Path<String>| async move { asset(&file) }))
}

async fn config(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(json!({
        "jwt": node.auth.is_some(),
        "version": env!("CARGO_PKG_VERSION"),
        "sampleEverySeconds": SAMPLE_EVERY.as_secs(),
    }))
}

/// One sample of the node's state.
#[derive(Clone, Default)]
struct Sample {
    time_ms: i64,
    /// Messages ever stored: the sum of every partition's high watermark.
    stored: u64,
    /// Messages done (acked or dead-lettered), summed over every group.
    consumed: u64,
    /// Unfinished in queue mode, over every queue.
    depth: u64,
    /// Unfinished for the named groups, summed.
    lag: u64,
    /// Age of the oldest message a group has not finished.
    lag_seconds: f64,
    dead_letters: u64,
    /// queue -> (stored, depth)
    queues: BTreeMap<String, (u64, u64)>,
}

fn sample(store: &Store, now_us: i64) -> Sample {
    let mut s = Sample { time_ms: now_us / 1000, dead_letters: store.dlq.len() as u64, ..Sample::default() };
    let mut per_queue: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for ((q, _), p) in store.partitions.iter() {
        s.stored += p.next_offset;
        per_queue.entry(*q).or_default().0 += p.next_offset - p.log_start;
    }
    let mut oldest_us = i64::MAX;
    for ((q, p, group), c) in store.cursors.iter() {
        let Some(row) = store.partition(*q, *p) else { continue };
        let done = c.committed + c.done_above.len() as u64;
        s.consumed += done;
        let pending = row.next_offset.saturating_sub(done);
        if group == QUEUE_MODE {
            per_queue.entry(*q).or_default().1 += pending;
            s.depth += pending;
        } else {
            s.lag += pending;
        }
        if pending > 0 {
            if let Some(t) = store.locator.timestamp_of(*q, *p, c.committed) {
                oldest_us = oldest_us.min(t);
            }
        }
    }
    // A partition queue mode never popped is all pending in queue mode.
    for ((q, p), row) in store.partitions.iter() {
        if store.cursors.get(&(*q, *p, QUEUE_MODE.to_string())).is_none() {
            let pending = row.next_offset - row.log_start;
            per_queue.entry(*q).or_default().1 += pending;
            s.depth += pending;
        }
    }
    if oldest_us != i64::MAX {
        s.lag_seconds = ((now_us - oldest_us).max(0) as f64) / 1e6;
    }
    let mut queues: Vec<(u64, (u64, u64))> = per_queue.into_iter().collect();
    queues.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(b.1 .0.cmp(&a.1 .0)));
    for (q, numbers) in queues.into_iter().take(QUEUES_PER_SAMPLE) {
        if let Some(name) = store.queue_name(q) {
            s.queues.insert(name.to_string(), numbers);
        }
    }
    s
}

/// One sample over several raft groups: their stores' samples summed, with
/// the busiest queues of all of them.
fn sample_groups(samples: impl Iterator<Item = Sample>, now_us: i64) -> Sample {
    let mut all = Sample { time_ms: now_us / 1000, ..Sample::default() };
    for s in samples {
        all.stored += s.stored;
        all.consumed += s.consumed;
        all.depth += s.depth;
        all.lag += s.lag;
        all.lag_seconds = all.lag_seconds.max(s.lag_seconds);
        all.dead_letters += s.dead_letters;
        all.queues.extend(s.queues);
    }
    if all.queues.len() > QUEUES_PER_SAMPLE {
        let mut queues: Vec<(String, (u64, u64))> = std::mem::take(&mut all.queues).into_iter().collect();
        queues.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(b.1 .0.cmp(&a.1 .0)));
        all.queues = queues.into_iter().take(QUEUES_PER_SAMPLE).collect();
    }
    all
}

#[derive(Default)]
pub struct History {
    samples: Mutex<VecDeque<Sample>>,
}

impl History {
    fn record(&self, s: Sample) {
        let mut samples = self.samples.lock().expect("dashboard history lock");
        if samples.len() == SAMPLES_KEPT {
            samples.pop_front();
        }
        samples.push_back(s);
    }

    fn json(&self) -> Value {
        let samples = self.samples.lock().expect("dashboard history lock").clone();
        let mut out = Vec::with_capacity(samples.len());
        let mut before: Option<&Sample> = None;
        for s in &samples {
            let rate = |now: u64, then: Option<u64>| -> f64 {
                match (before, then) {
                    (Some(b), Some(then)) if s.time_ms > b.time_ms => {
                        now.saturating_sub(then) as f64 * 1000.0 / (s.time_ms - b.time_ms) as f64
                    }
                    _ => 0.0,
                }
            };
            let queues: serde_json::Map<String, Value> = s
                .queues
                .iter()
                .map(|(name, (stored, depth))| {
                    let then = before.and_then(|b| b.queues.get(name)).map(|q| q.0);
                    (name.clone(), json!({"messages": stored, "depth": depth, "pushRate": rate(*stored, then)}))
                })
                .collect();
            out.push(json!({
                "time": super::ids::iso_time(s.time_ms * 1000),
                "t": s.time_ms,
                "pushRate": rate(s.stored, before.map(|b| b.stored)),
                "consumeRate": rate(s.consumed, before.map(|b| b.consumed)),
                "depth": s.depth,
                "lag": s.lag,
                "lagSeconds": s.lag_seconds,
                "deadLetters": s.dead_letters,
                "queues": queues,
            }));
            before = Some(s);
        }
        json!({"intervalSeconds": SAMPLE_EVERY.as_secs(), "kept": SAMPLES_KEPT, "samples": out})
    }
}

type Histories = Mutex<Vec<(Weak<Node>, Arc<History>)>>;

/// The history of each node in this process, started with its router.
fn histories() -> &'static Histories {
    static ALL: OnceLock<Histories> = OnceLock::new();
    ALL.get_or_init(Default::default)
}

fn history_of(node: &Arc<Node>) -> Arc<History> {
    let mut all = histories().lock().expect("dashboard histories lock");
    all.retain(|(n, _)| n.strong_count() > 0);
    if let Some((_, h)) = all.iter().find(|(n, _)| std::ptr::eq(n.as_ptr(), Arc::as_ptr(node))) {
        return h.clone();
    }
    let history = Arc::new(History::default());
    all.push((Arc::downgrade(node), history.clone()));
    // Sampled on a task that ends with the node; without a runtime (a
    // router built outside one) there is no history.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let (weak, h) = (Arc::downgrade(node), history.clone());
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(node) = weak.upgrade() else { return };
                let now_us = chrono::Utc::now().timestamp_micros();
                // One group's store locked at a time.
                let s = sample_groups(node.queue_groups().iter().map(|g| sample(&g.view.local(), now_us)), now_us);
                drop(node);
                h.record(s);
            }
        });
    }
    history
}

/// `GET /api/v1/dashboard/history`.
pub async fn history(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(history_of(&node).json())
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    #[test]
    fn every_module_the_page_imports_is_embedded() {
        for (name, _, body) in ASSETS {
            for line in body.lines().filter(|l| l.trim_start().starts_with("import ")) {
                let Some(from) = line.split(['"', '\'']).nth(1) else { continue };
                let file = from.trim_start_matches("./");
                assert!(ASSETS.iter().any(|(n, _, _)| *n == file), "{name} imports {from}, which is not embedded");
            }
        }
    }
}
