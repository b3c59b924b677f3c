//! Retention on a running node: every `RETENTION_INTERVAL` the scanner walks
//! the partitions, at most `QUEEN_RAFT_RETENTION_SCAN_PER_S` a second, and
//! proposes `Command::Retain` for those of queues with a retention whose
//! watermarks would move, and `Command::CleanupPartitions` for those idle
//! for `PARTITION_CLEANUP_DAYS` and empty, and `Command::ExpireDedup` for
//! those holding dedup rows past their window; the planner decides them again
//! (`planner/retention.rs`, `planner/cleanup.rs`). Then one reclaim pass
//! frees the qlog files, or the parts of them, nothing needs any more
//! (`qlog/reclaim.rs`).

use crate::node::{GroupCore, Node};
use crate::planner::cleanup::{is_idle_and_empty, NumberedQueues};
use crate::planner::command::{Answer, Command};
use crate::planner::retention::{dedup_expired_below, watermarks, ByQueue, DedupWindows};
use crate::reclaim::{Freed, Pass, Policy, Position};
use crate::replicate::ProposeError;
use crate::store::{PartitionKey, Store};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub const RETENTION_INTERVAL: Duration = Duration::from_millis(5000);
/// Partitions judged under one hold of the store's read lock, so apply
/// never waits long for a scan.
const PARTITIONS_PER_LOCK: usize = 1024;
/// Partitions one `Retain` or `CleanupPartitions` entry carries.
const PARTITIONS_PER_ENTRY: usize = 1000;

pub async fn run(node: Arc<Node>) {
    let mut interval = tokio::time::interval(RETENTION_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut scan_from: Vec<PartitionKey> = vec![(0, 0); node.groups().len()];
    let mut reclaim_from: Vec<Position> = vec![(0, 0); node.groups().len()];
    let idle_us = (node.settings.partition_cleanup_days * 86_400e6) as i64;
    let cleanup = (idle_us > 0).then_some(idle_us);
    loop {
        interval.tick().await;
        // The scan's rate is the node's, shared among its groups.
        let per_round = node.settings.retention_scan_per_s * RETENTION_INTERVAL.as_secs() as usize;
        let share = per_round.div_ceil(node.groups().len());
        for (group, scan_from) in node.groups().iter().zip(scan_from.iter_mut()) {
            let mut budget = share;
            let mut found = Found::default();
            while budget > 0 {
                let now_us = chrono::Utc::now().timestamp_micros();
                let slice = budget.min(PARTITIONS_PER_LOCK);
                let window = node.settings.txn_window_min_s;
                let judge = (now_us, window, cleanup);
                let next = scan(&group.view.local(), *scan_from, slice, judge, &mut found);
                budget -= slice;
                match next {
                    Some(key) => *scan_from = key,
                    None => {
                        *scan_from = (0, 0);
                        break;
                    }
                }
                tokio::task::yield_now().await;
            }
            let txn_window_min_s = node.settings.txn_window_min_s;
            let retain = |partitions| Command::Retain { partitions, txn_window_min_s };
            let Some(retained) = propose_in_chunks(group, &found.due, retain).await else { return };
            node.metrics.partitions_retained.inc_by(retained);
            let expire = |partitions| Command::ExpireDedup { partitions, txn_window_min_s };
            if propose_in_chunks(group, &found.dedup, expire).await.is_none() {
                return;
            }
            if let Some(idle_us) = cleanup {
                let clean = |partitions| Command::CleanupPartitions { partitions, idle_us };
                let Some(cleaned) = propose_in_chunks(group, &found.idle, clean).await else { return };
                node.metrics.partitions_cleaned_up.inc_by(cleaned);
            }
        }
        // Each raft group's logs are reclaimed from its own store.
        for (g, from) in reclaim_from.iter_mut().enumerate() {
            let (n, start) = (node.clone(), *from);
            let pass = move || {
                let group = &n.groups()[g];
                let checkpointed = group.checkpointed.load(Ordering::Acquire);
                let policy =
                    Policy { shared_logs: group.layout.shards > 0, min_dead_pct: n.settings.compact_min_dead_pct };
                // A snapshot's build holds it for its copy: see its module.
                let _held = group.reclaim.lock().expect("reclaim lock");
                let pass = Pass {
                    root: &group.qlog_root,
                    files: &group.files,
                    store: &group.state,
                    checkpointed,
                    policy,
                    retired: &group.retired,
                    clock: &*n.clock,
                };
                pass.run(start)
            };
            match tokio::task::spawn_blocking(pass).await {
                Ok(Ok((freed, next))) => {
                    *from = next;
                    if freed != Freed::default() {
                        node.metrics.qlog_files_reclaimed.inc_by(freed.files);
                        node.metrics.qlog_files_rewritten.inc_by(freed.rewritten);
                        node.metrics.qlog_bytes_reclaimed.inc_by(freed.bytes);
                        tracing::info!(
                            group = g,
                            unlinked = freed.files,
                            rewritten = freed.rewritten,
                            bytes = freed.bytes,
                            "qlog files reclaimed"
                        );
                    }
                }
                Ok(Err(e)) => tracing::warn!(group = g, error = %e, "a qlog reclaim pass failed; the next one retries"),
                Err(_) => return,
            }
        }
    }
}

/// Proposes `command` for each chunk of `partitions`; answers how many
/// partitions the planner changed, or `None` once the replicator stopped.
/// A chunk refused otherwise (no leader in an election, a timeout) ends
/// this group's round: the next round finds the same partitions again.
async fn propose_in_chunks(
    group: &GroupCore,
    partitions: &[(u64, u64)],
    command: impl Fn(Vec<(u64, u64)>) -> Command,
) -> Option<u64> {
    let mut changed = 0;
    for chunk in partitions.chunks(PARTITIONS_PER_ENTRY) {
        match group.replicator.propose(command(chunk.to_vec())).await {
            Ok(Answer::Retained { partitions } | Answer::CleanedUp { partitions }) => changed += partitions as u64,
            Ok(_) => {}
            Err(ProposeError::ShuttingDown) => return None,
            Err(e) => {
                tracing::debug!(error = %e, "a retention entry was not written; the next round retries");
                break;
            }
        }
    }
    Some(changed)
}

/// What one round's scan found.
#[derive(Default)]
struct Found {
    /// Partitions whose retention watermarks would move.
    due: Vec<(u64, u64)>,
    /// Partitions idle and empty long enough to be deleted.
    idle: Vec<(u64, u64)>,
    /// Partitions holding dedup rows past their window.
    dedup: Vec<(u64, u64)>,
}

/// Judges up to `max` partitions from `from` on, at `now_us`, with the
/// hash window and the cleanup age (none: no cleanup); answers where to go
/// on, if anywhere.
fn scan(
    store: &Store,
    from: PartitionKey,
    max: usize,
    (now_us, txn_window_min_s, cleanup_us): (i64, u64, Option<i64>),
    found: &mut Found,
) -> Option<PartitionKey> {
    let mut by_queue = ByQueue::default();
    let mut windows = DedupWindows::default();
    let mut numbered = NumberedQueues::default();
    for (i, (&(queue, partition), _)) in store.partitions.range(from..).enumerate() {
        if i == max {
            return Some((queue, partition));
        }
        let key = (queue, partition);
        if cleanup_us.is_some_and(|idle| is_idle_and_empty(store, key, (now_us, idle), &mut numbered)) {
            found.idle.push((queue, partition));
            continue;
        }
        if dedup_expired_below(store, &mut windows, key, now_us, txn_window_min_s).is_some() {
            found.dedup.push(key);
        }
        let Some(retention) = by_queue.get(store, queue) else { continue };
        if watermarks(store, retention, partition, now_us, txn_window_min_s).is_some() {
            found.due.push((queue, partition));
        }
    }
    None
}
