//! `GET /api/v1/pop/queue/{queue}[/partition/{partition}]` and
//! `GET /api/v1/pop?namespace=&task=`: claim partitions under a lease for a
//! consumer group and deliver their next messages. A long poll (`wait=true`)
//! waits for an apply (a push, an ack, a release) rather than polling the
//! store, with a short tick for leases and delays that run out on their own.

use super::body::query_u64;
use super::error::ApiError;
use super::ids::{iso_time, kafka_fields, message_uuid, partition_uuid, value_json};
use super::pop_frames::{self, Delivered};
use crate::node::Node;
use crate::planner::command::{Claim, PopRequest, Subscription, QUEUE_MODE};
use crate::replicate::typed::Typed;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a pop takes when the client leaves it to the broker (`autopilot`).
const AUTOPILOT_BATCH: usize = 100;
const AUTOPILOT_PARTITIONS: usize = 1;
/// The longest a long poll may wait.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// How often a waiting pop looks again when nothing was applied: leases and
/// retry delays run out without an apply to announce it.
const TICK: Duration = Duration::from_millis(100);
/// The longest lease a pop may ask for (`leaseSeconds`): a week.
const MAX_LEASE_SECONDS: u64 = 7 * 24 * 3600;

type Params = Query<HashMap<String, String>>;

pub async fn pop_queue(
    State(node): State<Arc<Node>>,
    Path(queue): Path<String>,
    Query(q): Params,
) -> Result<Response, ApiError> {
    pop(node, Some(queue), None, q).await
}

pub async fn pop_partition(
    State(node): State<Arc<Node>>,
    Path((queue, partition)): Path<(String, String)>,
    Query(q): Params,
) -> Result<Response, ApiError> {
    pop(node, Some(queue), Some(partition), q).await
}

pub async fn pop_filtered(State(node): State<Arc<Node>>, Query(q): Params) -> Result<Response, ApiError> {
    if !q.contains_key("namespace") && !q.contains_key("task") {
        return Err(ApiError::bad_request("missing_field", "a pop without a queue names a namespace or a task"));
    }
    pop(node, None, None, q).await
}

fn flag(q: &HashMap<String, String>, name: &str) -> Result<bool, ApiError> {
    match q.get(name).map(String::as_str) {
        None => Ok(false),
        Some("true" | "1") => Ok(true),
        Some("false" | "0") => Ok(false),
        Some(v) => Err(ApiError::bad_request("invalid_field", format!("{name} must be true or false, not {v:?}"))),
    }
}

fn subscription(q: &HashMap<String, String>) -> Result<Subscription, ApiError> {
    if let Some(from) = q.get("subscriptionFrom") {
        if from == "now" {
            return Ok(Subscription::New);
        }
        let t = chrono::DateTime::parse_from_rfc3339(from).map_err(|_| {
            ApiError::bad_request("invalid_field", format!("subscriptionFrom must be an ISO-8601 time, not {from:?}"))
        })?;
        return Ok(Subscription::From(t.timestamp_micros()));
    }
    match q.get("subscriptionMode").map(String::as_str) {
        None | Some("all" | "" | "from_beginning") => Ok(Subscription::All),
        Some("new" | "new-only" | "latest") => Ok(Subscription::New),
        Some(m) => {
            Err(ApiError::bad_request("invalid_field", format!("subscriptionMode must be all or new, not {m:?}")))
        }
    }
}

/// `leaseSeconds`: this pop's lease length, at least one second like `leaseTime`.
fn lease_seconds(q: &HashMap<String, String>) -> Result<Option<i64>, ApiError> {
    let Some(seconds) = query_u64(q, "leaseSeconds")? else { return Ok(None) };
    if !(1..=MAX_LEASE_SECONDS).contains(&seconds) {
        return Err(ApiError::bad_request(
            "invalid_field",
            format!("leaseSeconds must be from 1 to {MAX_LEASE_SECONDS}, not {seconds}"),
        ));
    }
    Ok(Some(seconds as i64 * 1_000_000))
}

async fn pop(
    node: Arc<Node>,
    queue: Option<String>,
    partition: Option<String>,
    q: HashMap<String, String>,
) -> Result<Response, ApiError> {
    let conflation = flag(&q, "conflation")?;
    let batch = query_u64(&q, "batch")?.map_or(AUTOPILOT_BATCH, |b| b.max(1) as usize);
    let partitions = query_u64(&q, "partitions")?.map_or(AUTOPILOT_PARTITIONS, |p| p.max(1) as usize);
    let wait = flag(&q, "wait")?;
    let framed = flag(&q, "frames")?;
    let timeout = Duration::from_millis(query_u64(&q, "timeout")?.unwrap_or(30_000)).min(MAX_WAIT);
    let group = q.get("consumerGroup").filter(|g| !g.is_empty() && *g != "null").cloned();
    if group.as_ref().is_some_and(|g| g.len() > super::names::MAX_NAME_BYTES) {
        return Err(ApiError::bad_request("invalid_field", "consumerGroup must be at most 255 bytes long"));
    }
    let auto_ack = flag(&q, "autoAck")?;
    // A share group's consumers take records one by one (`planner/share.rs`).
    if flag(&q, "shared")? {
        let Some(group) = group.as_deref() else {
            return Err(ApiError::bad_request(
                "shared_requires_group",
                "shared is a consumer group's mode: name the group",
            ));
        };
        if conflation {
            return Err(ApiError::bad_request(
                "conflation_with_shared",
                "conflation delivers a partition's newest message to one consumer; a share group takes records one by one",
            ));
        }
        crate::share_groups::declare(&node, group).await?;
    }
    if conflation && group.is_none() {
        return Err(ApiError::bad_request(
            "conflation_requires_group",
            "conflation is a consumer group's policy: name the group",
        ));
    }
    if conflation && auto_ack {
        return Err(ApiError::bad_request(
            "conflation_with_commit_on_delivery",
            "conflation retires what it skips under a lease; it does not combine with autoAck",
        ));
    }
    let req = PopRequest {
        queue,
        partition,
        namespace: q.get("namespace").cloned(),
        task: q.get("task").cloned(),
        group: group.clone().unwrap_or_else(|| QUEUE_MODE.to_string()),
        batch,
        partitions,
        auto_ack,
        subscription: subscription(&q)?,
        conflation,
        lease_us: lease_seconds(&q)?,
    };
    let deadline = Instant::now() + timeout;
    loop {
        let applied = node.apply_watch.applied();
        tokio::pin!(applied);
        applied.as_mut().enable();
        let claims = pop_once(&node, &req).await?;
        // The group's stored policy answers, echoed even on an empty pop so
        // the client can tell a conflating broker from one that ignored it.
        let mut own = json!({"autopilot": {"batch": batch, "partitions": partitions, "waitMs": 0}});
        let stored = stored_conflation(&node, &req);
        if stored {
            own["conflation"] = json!(true);
        } else if conflation {
            own["conflationConflict"] = json!(true);
        }
        if !claims.is_empty() {
            return answer(&node, claims, group.as_deref(), framed, own).await;
        }
        let now = Instant::now();
        if !wait || now >= deadline {
            if conflation || stored {
                let mut empty = json!({"success": true, "messages": []});
                if let (Value::Object(a), Value::Object(o)) = (&mut empty, own) {
                    a.extend(o);
                }
                return Ok(Json(empty).into_response());
            }
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let _ = tokio::time::timeout(TICK.min(deadline - now), applied).await;
    }
}

/// One pop: in the queue's group, or for a pop by namespace or task, in
/// each group that holds queues until one has something, starting from a
/// different group each time so that none is starved.
async fn pop_once(node: &Node, req: &PopRequest) -> Result<Vec<Claim>, ApiError> {
    static NEXT_FIRST: AtomicUsize = AtomicUsize::new(0);
    let groups = node.groups_for(req.queue.as_deref());
    let first = NEXT_FIRST.fetch_add(1, Ordering::Relaxed);
    // A group that cannot answer (electing a leader) holds up no other:
    // its error is the answer only if no group had anything.
    let mut refused = None;
    for i in 0..groups.len() {
        let group = &groups[(first + i) % groups.len()];
        match group.replicator.ask(Typed::pop(req.clone())).await {
            Ok(claims) if !claims.is_empty() => return Ok(claims),
            Ok(_) => {}
            Err(e) => refused = Some(e),
        }
    }
    match refused {
        Some(e) => Err(e.into()),
        None => Ok(Vec::new()),
    }
}

/// The conflation policy in force for the popping group: the stored one,
/// or, for a group not registered on the queue yet, the one it asks for.
fn stored_conflation(node: &Node, req: &PopRequest) -> bool {
    let Some(queue) = req.queue.as_deref() else { return req.conflation };
    let store = node.group_of(queue).view.local();
    let stored = store.queue_id(queue).and_then(|q| store.groups.get(&(q, req.group.clone()))).map(|g| g.conflate);
    stored.unwrap_or(req.conflation)
}

async fn answer(
    node: &Arc<Node>,
    claims: Vec<Claim>,
    group: Option<&str>,
    framed: bool,
    own: Value,
) -> Result<Response, ApiError> {
    let node = node.clone();
    let group = group.map(str::to_string);
    let answer = tokio::task::spawn_blocking(move || {
        let mut delivered = Vec::with_capacity(claims.len());
        for c in &claims {
            let offsets: Vec<u64> = c.messages.iter().map(|m| m.0).collect();
            let stored = node
                .group_of_id(c.queue_id)
                .reader
                .read_offsets(c.queue_id, c.partition_id, &offsets)
                .map_err(ApiError::storage)?;
            let attempts: HashMap<u64, u32> = c.messages.iter().copied().collect();
            let messages =
                stored.into_iter().map(|m| (attempts.get(&m.offset).copied().unwrap_or(1), m)).map(|(a, m)| (m, a));
            delivered.push(Delivered { claim: c, messages: messages.collect() });
        }
        let group_name = group.as_deref().unwrap_or(QUEUE_MODE);
        if framed {
            if let Some(bytes) = pop_frames::encode(&own, group_name, &delivered) {
                return Ok::<_, ApiError>(([(header::CONTENT_TYPE, pop_frames::CONTENT_TYPE)], bytes).into_response());
            }
        }
        Ok(Json(json_answer(&delivered, group.as_deref(), own)).into_response())
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))??;
    Ok(answer)
}

fn json_answer(delivered: &[Delivered<'_>], group: Option<&str>, own: Value) -> Value {
    let mut messages = Vec::new();
    for d in delivered {
        let c = d.claim;
        for (m, attempt) in &d.messages {
            let mut one = json!({
                "id": message_uuid(c.partition_id, m.offset),
                "transactionId": m.message.transaction_id,
                "traceId": m.message.trace_id,
                "producerSub": m.message.producer_sub,
                "data": value_json(&m.message),
                "createdAt": iso_time(m.timestamp_us),
                "queue": c.queue,
                "partition": c.partition,
                "partitionId": partition_uuid(c.queue_id, c.partition_id),
                "leaseId": c.lease_id,
                "leaseExpiresAt": iso_time(c.lease_expires_us),
                "consumerGroup": group,
                "deliveryAttempt": attempt,
                "retryCount": attempt - 1,
                "offset": m.offset,
            });
            if let Some((name, fields)) = kafka_fields(&m.message) {
                one[name] = fields;
            }
            messages.push(one);
        }
    }
    let first = delivered.first().map(|d| d.claim);
    let mut answer = json!({
        "success": true,
        "queue": first.map(|c| c.queue.clone()).unwrap_or_default(),
        "partition": first.map(|c| c.partition.clone()).unwrap_or_default(),
        "partitionId": first.map(|c| partition_uuid(c.queue_id, c.partition_id)).unwrap_or_default(),
        "leaseId": first.map(|c| c.lease_id.clone()).unwrap_or_default(),
        "consumerGroup": messages.first().map_or(Value::Null, |m| m["consumerGroup"].clone()),
        "partitionsClaimed": delivered.len(),
        "messages": messages,
    });
    if let (Value::Object(a), Value::Object(o)) = (&mut answer, own) {
        a.extend(o);
    }
    answer
}
