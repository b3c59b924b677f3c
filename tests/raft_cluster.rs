//! A three-node cluster of real `queen` processes on loopback: writes go
//! through every node (a follower forwards to the leader), the leader is
//! killed with SIGKILL under load and a new one takes over, and afterwards
//! every node serves every acknowledged write at the offset it was
//! acknowledged with, with no gap and nothing twice; a retry of an
//! acknowledged transactionId answers its original offset.

mod common;

use common::cluster::{writer, Cluster, Ledger};
use common::push_body;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_keep_every_acknowledged_write_through_a_leader_killed_under_load() {
    let mut cluster = Cluster::start(3).await;
    let first = cluster.leader().await;

    // A write through each node, follower or leader, commits.
    for i in 0..3 {
        let (status, body) = cluster
            .node(i)
            .post("/api/v1/push", &push_body(&[("cluster".into(), "warm".into(), format!("warm-{i}"), json!({}))]))
            .await;
        assert_eq!(status, 201, "a push through node {} answered {body}", i + 1);
    }

    // One writer per follower keeps writing while the leader is killed.
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let followers: Vec<usize> = (0..3).filter(|i| *i != first).collect();
    let writers: Vec<_> = followers
        .iter()
        .map(|&i| tokio::spawn(writer(cluster.node(i).url("/api/v1/push"), ledger.clone(), i, stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before_kill = ledger.lock().unwrap().len();
    cluster.nodes[first].as_mut().unwrap().kill9();
    let killed = cluster.nodes[first].take().unwrap();
    let second = cluster.leader().await;
    assert_ne!(second, first, "a new leader took over");
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // The killed node comes back on its own directory and catches up.
    cluster.nodes[first] = Some(killed.restart().await);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let mut retried = 0;
    for w in writers {
        retried += w.await.unwrap();
    }
    let ledger = ledger.lock().unwrap().clone();
    eprintln!(
        "node {} led, then node {}: {} pushes acknowledged ({before_kill} before the kill), {retried} attempts retried",
        first + 1,
        second + 1,
        ledger.len()
    );
    assert!(
        ledger.len() > before_kill,
        "writes committed after the leader was killed ({before_kill} before, {} in all)",
        ledger.len()
    );

    // Every node, the restarted one too, serves every acknowledged write.
    let partitions: Vec<String> = followers.iter().map(|w| format!("p{w}")).collect();
    cluster.check_ledger(&ledger, "cluster", &partitions).await;

    // A retry of an acknowledged write answers its original offset.
    let (txid, (partition, offset)) = ledger.iter().next().unwrap();
    let body = push_body(&[("cluster".into(), partition.clone(), txid.clone(), json!({}))]);
    let (status, answer) = cluster.node(second).post("/api/v1/push", &body).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer[0]["offset"].as_u64(), Some(*offset), "the retry of {txid} answered {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_through_a_leader_cut_off_from_the_majority_answers_503_timeout_within_its_timeout() {
    let mut cluster = Cluster::start(3).await;
    // The leader loses both followers: it still takes the write, which
    // cannot commit, and answers 503 `timeout` once QUEEN_RAFT_WRITE_TIMEOUT_MS
    // (5 s in these tests) has passed.
    let leader = cluster.leader().await;
    for i in (0..3).filter(|i| *i != leader) {
        cluster.nodes[i].as_mut().unwrap().kill9();
        cluster.nodes[i] = None;
    }
    let started = Instant::now();
    let body = push_body(&[("cluster".into(), "alone".into(), "alone-1".into(), json!({}))]);
    let (status, answer) = cluster.node(leader).post("/api/v1/push", &body).await;
    let took = started.elapsed();
    assert_eq!(status, 503, "a write without a majority answered {answer}");
    assert_eq!(answer["code"], "timeout", "{answer}");
    assert!(took >= Duration::from_secs(4) && took < Duration::from_secs(8), "the 503 came after {took:?}");
    eprintln!("a write through a leader without a majority answered 503 {} after {took:?}", answer["code"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_stopped_with_sigterm_hands_leadership_over_before_it_stops() {
    let mut cluster = Cluster::start(3).await;
    let first = cluster.leader().await;
    let started = Instant::now();
    cluster.nodes[first].as_mut().unwrap().terminate();
    let stopped = cluster.nodes[first].take().unwrap();
    assert!(stopped.log_text().contains("handed leadership over before stopping"), "{}", stopped.log_text());
    let second = cluster.leader().await;
    assert_ne!(second, first);
    eprintln!(
        "leadership moved from node {} to node {} in {:?}, stop included",
        first + 1,
        second + 1,
        started.elapsed()
    );
    let body = push_body(&[("cluster".into(), "after".into(), "after-1".into(), json!({}))]);
    let (status, answer) = cluster.node(3 - first - second).post("/api/v1/push", &body).await;
    assert_eq!(status, 201, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_frozen_with_sigstop_is_replaced_and_rejoins_as_a_follower_with_nothing_lost() {
    let cluster = Cluster::start(3).await;
    let first = cluster.leader().await;
    let followers: Vec<usize> = (0..3).filter(|i| *i != first).collect();
    let ledger: Ledger = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = followers
        .iter()
        .map(|&i| tokio::spawn(writer(cluster.node(i).url("/api/v1/push"), ledger.clone(), i, stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let pid = cluster.node(first).pid() as i32;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    // The two others elect a leader between them and go on committing.
    let deadline = Instant::now() + Duration::from_secs(20);
    let second = loop {
        let node = cluster.node(followers[0]);
        let health: serde_json::Value = node.http.get(node.url("/health")).send().await.unwrap().json().await.unwrap();
        match health["raft"]["leader"].as_u64() {
            Some(l) if l as usize - 1 != first => break l as usize - 1,
            _ => {}
        }
        assert!(Instant::now() < deadline, "no new leader while node {} was frozen", first + 1);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let during = ledger.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(ledger.lock().unwrap().len() > during, "writes committed while the old leader was frozen");
    unsafe { libc::kill(pid, libc::SIGCONT) };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(cluster.leader().await, second, "the thawed node follows the new leader");
    let ledger = ledger.lock().unwrap().clone();
    eprintln!("node {} frozen, node {} led: {} pushes acknowledged", first + 1, second + 1, ledger.len());
    let partitions: Vec<String> = followers.iter().map(|w| format!("p{w}")).collect();
    cluster.check_ledger(&ledger, "cluster", &partitions).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_forwarded_write_whose_leader_dies_after_the_send_answers_its_outcome_unknown() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.leader().await;
    let follower = (0..3).find(|i| *i != leader).unwrap();
    // Warm the follower's link to the leader, so the next write goes out at once.
    let body = push_body(&[("cluster".into(), "cut".into(), "warm".into(), json!({}))]);
    assert_eq!(cluster.node(follower).post("/api/v1/push", &body).await.0, 201);
    // Frozen, the leader's kernel still takes the forwarded request into its
    // socket; killed then, the connection closes after the send, before any
    // answer. The write may have reached the leader's log: the follower
    // cannot say it did not, so it answers `timeout`, never `no_leader`.
    let pid = cluster.node(leader).pid() as i32;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let url = cluster.node(follower).url("/api/v1/push");
    let http = cluster.node(follower).http.clone();
    let body = push_body(&[("cluster".into(), "cut".into(), "after-send".into(), json!({}))]);
    let sent = tokio::spawn(async move { http.post(url).json(&body).send().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.nodes[leader].as_mut().unwrap().kill9();
    cluster.nodes[leader] = None;
    let answer = sent.await.unwrap();
    let status = answer.status().as_u16();
    let answer: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(
        (status, answer["code"].as_str()),
        (503, Some("timeout")),
        "a write cut after its send answered {answer}"
    );
}
