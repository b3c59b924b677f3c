//! `POST /api/v1/transaction`: `{operations: [push | ack ...], requiredLeases,
//! kv}` committed as one entry, all or nothing. Every verdict is a 200: a
//! committed bundle has one result per flat index (each push item, each ack,
//! then each KV op); a rolled-back one says why and that it rolled back.

use super::auth::ProducerSub;
use super::body::{body_bytes, json_map, json_object, objects, Fields};
use super::error::ApiError;
use super::ids::{message_uuid, partition_uuid, payload_json};
use super::{ack, kv, push, push_binary, timers};
use crate::node::{distinct, GroupCore, Node};
use crate::planner::command::PushStatus;
use crate::planner::items::{REFUSED_UNKNOWN_MESSAGE, REFUSED_UNRESOLVABLE};
use crate::planner::transaction::{Bundle, BundleAnswer, Refusal};
use crate::replicate::typed::Typed;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The most KV operations one bundle carries.
pub const MAX_KV_OPS: usize = 64;

/// Where each flat index came from.
enum Slot {
    Push,
    Ack,
}

/// The one raft group a bundle touches: what its pushes, acks, timers and
/// required leases name, and group 0 for its KV operations. A bundle is one entry, atomic
/// because one group applies it: one that would touch several is refused
/// (`docs/operations.md`, "Several raft groups").
fn one_group<'n>(node: &'n Node, bundle: &Bundle) -> Result<&'n GroupCore, ApiError> {
    let queues = bundle.pushes.iter().map(|p| p.queue.as_str()).chain(bundle.timers.iter().map(|t| t.queue.as_str()));
    let acked = bundle.acks.iter().map(|a| node.group_of_id(a.queue_id));
    let leased = bundle.required_leases.iter().map(|l| node.group_of_derived(l));
    let kv = (!bundle.kv.is_empty()).then(|| node.group0());
    let groups = distinct(queues.map(|q| node.group_of(q)).chain(acked).chain(leased).chain(kv));
    match groups.as_slice() {
        [] => Ok(node.group0()),
        [one] => Ok(one),
        _ => Err(ApiError::new(
            StatusCode::CONFLICT,
            "transaction_spans_groups",
            format!(
                "this transaction touches {} raft groups (QUEEN_RAFT_GROUPS places each queue in one, and KV in group 0); \
                 a transaction is atomic within one group: split it, or keep its queues and KV apart",
                groups.len()
            ),
        )),
    }
}

fn rider<'a>(body: &'a Map<String, Value>, name: &str) -> Result<&'a [Value], ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => {
            Err(ApiError::bad_request("invalid_field", format!("{name} is an array at the TOP LEVEL of the body")))
        }
    }
}

pub async fn commit(
    State(node): State<Arc<Node>>,
    producer: Option<Extension<ProducerSub>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let producer = ProducerSub::of(producer);
    // The binary body (QTB1) is a JSON head and the pushes as frames; the
    // pushes come after the head's operations.
    let (body, binary_pushes, counts) = if push::is_binary(&headers) {
        let (head, items, flags) = push_binary::decode_transaction(&body_bytes(body)?, node.settings.max_body_bytes)?;
        let head = if head.is_empty() { Map::new() } else { json_map(&head)? };
        (head, push::binary_items(&node, items, producer.as_deref())?, flags & push_binary::FLAG_COUNTS != 0)
    } else {
        (json_object(body)?, vec![], false)
    };
    let top = Fields::new(&body, "");
    let mut bundle = Bundle { pushes: vec![], acks: vec![], required_leases: vec![], kv: vec![], timers: vec![] };
    let mut slots = Vec::new();
    let mut sealer = node.sealer();
    let operations = match body.get("operations") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => objects(a, "operations")?,
        Some(_) => return Err(top.mistyped("operations", "an array")),
    };
    for op in &operations {
        match op.opt_str("type")? {
            Some("push") => {
                let items = match op.map.get("items") {
                    Some(Value::Array(items)) => objects(items, &format!("{}.items", op.path))?,
                    Some(_) => return Err(op.mistyped("items", "an array")),
                    None => vec![Fields::new(op.map, op.path.clone())],
                };
                for item in &items {
                    bundle.pushes.push(push::push_item(item, &node.settings, &mut sealer, producer.as_deref())?);
                    slots.push(Slot::Push);
                }
            }
            Some("ack") => match ack::item(op, None)? {
                Ok(item) => {
                    bundle.acks.push(item);
                    slots.push(Slot::Ack);
                }
                Err(why) => {
                    return Ok(Json(rolled_back(
                        &format!("QTXN {why} on {}; the transaction rolled back", op.path),
                        "rejected_ack",
                    )));
                }
            },
            Some(other) => {
                return Err(
                    op.mistyped("type", &format!("push or ack (the kv rider sits at the top level), not {other:?}"))
                )
            }
            None => return Err(op.missing("type")),
        }
    }
    for item in binary_pushes {
        bundle.pushes.push(item);
        slots.push(Slot::Push);
    }
    for lease in rider(&body, "requiredLeases")? {
        let lease = lease
            .as_str()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| top.mistyped("requiredLeases", "an array of lease ids"))?;
        bundle.required_leases.push(lease.to_string());
    }
    let kv_ops = rider(&body, "kv")?;
    if kv_ops.len() > MAX_KV_OPS {
        return Err(ApiError::bad_request(
            "kv_bad_request",
            format!("a transaction carries at most {MAX_KV_OPS} KV operations"),
        )
        .with_reason("kv_too_many_ops"));
    }
    for op in kv_ops {
        if op.get("op").and_then(Value::as_str) == Some("getPrefix") {
            return Err(ApiError::bad_request("kv_bad_request", "getPrefix is not allowed in a transaction")
                .with_reason("kv_get_prefix_not_allowed_in_transaction"));
        }
        bundle.kv.push(kv::parse_op(op)?);
    }
    for op in rider(&body, "timers")? {
        bundle.timers.push(timers::parse_op(op)?);
    }
    timers::seal_ops(&node, &mut bundle.timers)?;
    if slots.is_empty() && bundle.kv.is_empty() && bundle.timers.is_empty() {
        return Err(ApiError::bad_request("empty_transaction", "a transaction carries at least one operation"));
    }
    let kv_ops = bundle.kv.clone();
    let timer_ops = bundle.timers.clone();
    let push_names: Vec<(String, String)> = bundle
        .pushes
        .iter()
        .map(|p| (p.queue.clone(), p.transaction_id().expect("an HTTP push item is one message").to_string()))
        .collect();
    let ack_ids: Vec<String> = bundle.acks.iter().map(|a| a.transaction_id.clone()).collect();
    super::ack_places::resolve(&node, &mut bundle.acks);
    let group = one_group(&node, &bundle)?;
    let answer = group.replicator.ask(Typed::transaction(bundle)).await?;
    let (pushes, acks, kv_results, timer_results) = match answer {
        BundleAnswer::Committed { pushes, acks, kv, timers } => (pushes, acks, kv, timers),
        BundleAnswer::RolledBack(refusal) => {
            return Ok(Json(refusal_json(refusal, slots.len(), &push_names, &ack_ids)))
        }
    };
    let (mut pushes, mut acks) = (pushes.iter().zip(&push_names), acks.iter().zip(&ack_ids));
    let mut results = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        results.push(match slot {
            Slot::Push => {
                let (o, (queue, txid)) = pushes.next().expect("one outcome per push item");
                let mut v = json!({
                    "index": index, "type": "push", "success": true, "transactionId": txid, "queueName": queue,
                    "messageId": message_uuid(o.partition_id, o.offset), "partitionId": partition_uuid(o.queue_id, o.partition_id),
                    "offset": o.offset,
                });
                if o.status == PushStatus::Duplicate {
                    v["duplicate"] = json!(true);
                }
                v
            }
            Slot::Ack => {
                let (o, txid) = acks.next().expect("one outcome per ack");
                json!({"index": index, "type": "ack", "success": true, "transactionId": txid, "error": null, "dlq": o.dead_lettered})
            }
        });
    }
    for (i, (op, r)) in kv_ops.iter().zip(&kv_results).enumerate() {
        let mut v = kv::result_json(slots.len() + i, op, r);
        v["type"] = json!("kv");
        v["opIndex"] = json!(i);
        results.push(v);
    }
    let timers_base = slots.len() + kv_ops.len();
    for (j, (op, r)) in timer_ops.iter().zip(&timer_results).enumerate() {
        let mut v = timers::result_json(op, r);
        v["index"] = json!(timers_base + j);
        v["type"] = json!("timer");
        v["opIndex"] = json!(j);
        results.push(v);
    }
    let mut answer = json!({"transactionId": uuid::Uuid::new_v4().to_string(), "success": true});
    if counts {
        // The pushes and acks counted; the riders' results stay.
        let count = |kind: &str| results.iter().filter(|r| r["type"] == kind).count();
        let duplicate = results.iter().filter(|r| r["type"] == "push" && r["duplicate"] == true).count();
        answer["pushed"] = json!(count("push") - duplicate);
        answer["duplicate"] = json!(duplicate);
        answer["acked"] = json!(count("ack"));
        results.retain(|r| r["type"] != "push" && r["type"] != "ack");
    }
    answer["results"] = json!(results);
    Ok(Json(answer))
}

fn rolled_back(error: &str, reason: &str) -> Value {
    json!({"transactionId": uuid::Uuid::new_v4().to_string(), "success": false, "reason": reason, "error": error, "results": []})
}

fn refusal_json(refusal: Refusal, kv_base: usize, pushes: &[(String, String)], acks: &[String]) -> Value {
    match refusal {
        Refusal::Duplicate { item, offset } => rolled_back(
            &format!("QDUP a pushed message to {} ({}) is a duplicate (original offset {offset}); the transaction rolled back", pushes[item].0, pushes[item].1),
            "duplicate",
        ),
        Refusal::RejectedAck { ack, why } => {
            let why = if [REFUSED_UNKNOWN_MESSAGE, REFUSED_UNRESOLVABLE].contains(&why.0) {
                "is not a stored message"
            } else {
                "is not leased by this bundle or is already acknowledged"
            };
            rolled_back(&format!("QTXN acked message {} {why}; the transaction rolled back", acks[ack]), "rejected_ack")
        }
        Refusal::LeaseGone { lease } => {
            rolled_back(&format!("QTXN lease {lease} expired or is not held; the transaction rolled back"), "rejected_ack")
        }
        Refusal::KvPrecondition { op, reason, row } => {
            let mut v = rolled_back("QKV a required KV precondition failed; the transaction rolled back", "kv_precondition");
            v["ok"] = json!(false);
            v["failedIndex"] = json!(kv_base + op);
            v["kvReason"] = json!(reason.as_str());
            v["version"] = row.as_ref().map_or(Value::Null, |r| json!(r.version));
            v["value"] = row.as_ref().map_or(Value::Null, |r| payload_json(r.value.as_bytes()));
            v
        }
        Refusal::QueueFull(full) => rolled_back(
            &format!("QFULL {}; the transaction rolled back", super::push::queue_full_message(&full)),
            "queue_full",
        ),
    }
}
