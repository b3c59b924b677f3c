//! Several raft groups per node (`QUEEN_RAFT_GROUPS`): three real nodes
//! founded with four groups share one raft port per node, every group
//! elects, leadership spreads so that each node leads a group, and each
//! queue lives in one of groups 1 to 3. A kill -9 re-elects only the group
//! the killed node led while the others keep their leaders and terms; HTTP
//! and Kafka writers, one in each data group, keep committing in the
//! groups the killed node did not lead and resume in its group once that
//! group elects; every acknowledged write is there, once, gapless. The
//! node back takes its preferred group again; a SIGTERM hands over the
//! groups a node leads; and a node is replaced (removed, joined empty,
//! added, promoted), each membership change carried to every group.

mod common;

use common::cluster::{start, Cluster, Ledger, Writer};
use common::kafka::idempotent_writer;
use queen::seams::placement::group_of_queue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const GROUPS: usize = 4;

/// A name starting with `prefix` that group `g` holds.
fn placed_in(prefix: &str, g: u32) -> String {
    (0..).map(|i| format!("{prefix}-{i}")).find(|name| group_of_queue(name, GROUPS as u32) == g).unwrap()
}

/// The longest wait between two acknowledgements in `acked` that ends
/// after `from`, and how many acknowledgements came in `from..until`.
fn stall_and_count(acked: &[Instant], from: Instant, until: Instant) -> (Duration, usize) {
    let longest = acked.windows(2).filter(|w| w[1] > from).map(|w| w[1] - w[0]).max().unwrap_or_default();
    (longest, acked.iter().filter(|t| **t >= from && **t < until).count())
}

/// Each group's (leader, term), as every running node sees it, once they
/// all agree; `None` while they do not.
async fn group_leaders(cluster: &Cluster) -> Option<Vec<(u64, u64)>> {
    let mut seen: Option<Vec<(u64, u64)>> = None;
    for node in cluster.nodes.iter().flatten() {
        let health: Value = node.http.get(node.url("/health")).send().await.ok()?.json().await.ok()?;
        let groups = health["groups"].as_array()?;
        let mine: Vec<(u64, u64)> =
            groups.iter().map(|g| Some((g["leader"].as_u64()?, g["term"].as_u64()?))).collect::<Option<_>>()?;
        if mine.len() != GROUPS || seen.as_ref().is_some_and(|s| *s != mine) {
            return None;
        }
        seen = Some(mine);
    }
    seen
}

/// Waits until the running nodes agree on every group's leader and `done`
/// holds of the leaders.
async fn leaders_when(cluster: &Cluster, within: Duration, done: impl Fn(&[(u64, u64)]) -> bool) -> Vec<(u64, u64)> {
    let deadline = Instant::now() + within;
    loop {
        let leaders = group_leaders(cluster).await;
        if let Some(leaders) = leaders.as_ref().filter(|l| done(l)) {
            return leaders.clone();
        }
        assert!(Instant::now() < deadline, "the groups did not settle as wanted: {leaders:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_groups_on_three_nodes_spread_their_leaders_and_a_kill_stalls_only_the_killed_nodes_groups() {
    let mut cluster = Cluster::start_with(3, &[("QUEEN_RAFT_GROUPS", "4")]).await;
    for i in 0..3 {
        let groups_dir = cluster.dir(i).join("groups");
        for g in 1..GROUPS {
            assert!(groups_dir.join(format!("g{g}/qlog/GROUPS")).exists(), "node {} has group {g}'s layout", i + 1);
        }
    }

    // Group g prefers node g % 3 + 1: each node leads a group.
    let preferred = |leaders: &[(u64, u64)]| leaders.iter().map(|l| l.0).collect::<Vec<_>>() == [1, 2, 3, 1];
    let before = leaders_when(&cluster, Duration::from_secs(60), preferred).await;

    let (status, membership) = cluster.call(0, reqwest::Method::GET, "/api/v1/system/raft/membership", None).await;
    assert_eq!(status, 200, "{membership}");
    let shown: Vec<(u64, u64)> = membership["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["group"].as_u64().unwrap(), g["membership"]["leader"].as_u64().unwrap()))
        .collect();
    assert_eq!(shown, vec![(0, 1), (1, 2), (2, 3), (3, 1)], "{membership}");

    // /metrics tells the groups apart.
    let metrics = cluster.node(0).http.get(cluster.node(0).url("/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    for (g, leader) in [1, 2, 3, 1].into_iter().enumerate() {
        let line = format!("queen_raft_group_leader{{group=\"{g}\"}} {leader}");
        assert!(metrics.lines().any(|l| l == line), "/metrics has {line}:\n{metrics}");
    }

    // An HTTP writer into a queue of each data group, through node 1, and
    // idempotent Kafka producers into a topic of group 2 (node 3's) and
    // of group 1 (node 2's) through nodes 1 and 2, go on through node 3's
    // kill. Each waits at most a second for an answer before it retries.
    let queues: Vec<String> = (1..GROUPS as u32).map(|g| placed_in("orders", g)).collect();
    let ledgers: Vec<Ledger> = queues.iter().map(|_| Ledger::default()).collect();
    let acked: Vec<Arc<Mutex<Vec<Instant>>>> = queues.iter().map(|_| Arc::default()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let url = cluster.node(0).url("/api/v1/push");
    let writers: Vec<_> = (0..queues.len())
        .map(|w| {
            let to = Writer { queue: queues[w].clone(), timeout: Duration::from_secs(1), acked_at: acked[w].clone() };
            tokio::spawn(to.run(url.clone(), ledgers[w].clone(), w, stop.clone()))
        })
        .collect();
    let topics = [placed_in("ktopic", 2), placed_in("ktopic", 1)];
    let kafka_ledgers: Vec<Ledger> = topics.iter().map(|_| Ledger::default()).collect();
    let brokers: Vec<(String, u16)> = (0..2).map(|i| ("127.0.0.1".to_string(), cluster.node(i).kafka_port)).collect();
    let kafka: Vec<_> = topics
        .iter()
        .zip(&kafka_ledgers)
        .map(|(t, l)| {
            let (topic, brokers, ledger, stop) = (t.clone(), brokers.clone(), l.clone(), stop.clone());
            tokio::spawn(async move { idempotent_writer(brokers, &topic, ledger, stop).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    cluster.nodes[2].take().unwrap().kill9();
    let killed_at = Instant::now();
    let after = leaders_when(&cluster, Duration::from_secs(20), |l| l[2].0 != 3).await;
    let elected_at = Instant::now();
    let stalled = elected_at - killed_at;
    for g in [0, 1, 3] {
        assert_eq!(after[g], before[g], "group {g}, not led by the killed node, kept its leader and term");
    }
    assert!(after[2].1 > before[2].1, "group 2 elected a new leader in a later term: {after:?}");
    assert!(stalled < Duration::from_secs(5), "group 2 went {stalled:?} without a leader");
    println!("group 2 re-elected {stalled:?} after its leader's kill -9");

    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Release);
    for w in writers {
        w.await.unwrap();
    }
    for k in kafka {
        k.await.unwrap();
    }
    // Groups 1 and 3 committed all through group 2's election, without a
    // pause longer than a heartbeat's; group 2's writer resumed once its
    // group elected.
    for (w, queue) in queues.iter().enumerate() {
        let g = w + 1;
        let acked = acked[w].lock().unwrap().clone();
        let (longest, during) = stall_and_count(&acked, killed_at, elected_at);
        println!("group {g} ({queue}): longest wait {longest:?}, {during} writes acknowledged during the election");
        let after_election = acked.iter().filter(|t| **t > elected_at).count();
        assert!(after_election > 10, "group {g}'s writer went on after the election: {after_election}");
        if g == 2 {
            // Its writes waited for its election: its data is in group 2.
            assert!(longest > Duration::from_millis(500), "group 2's writer waited only {longest:?}");
            assert!(longest < Duration::from_secs(6), "group 2's writer resumed {longest:?} after its last write");
        } else {
            assert!(during > 0, "group {g} committed while group 2 elected");
            assert!(longest < Duration::from_millis(1000), "group {g} paused {longest:?} for another group's election");
        }
    }
    for (w, queue) in queues.iter().enumerate() {
        let ledger = ledgers[w].lock().unwrap().clone();
        assert!(ledger.len() > 20, "the writer of {queue} was answered: {}", ledger.len());
        cluster.check_ledger(&ledger, queue, &[format!("p{w}")]).await;
    }
    for (topic, ledger) in topics.iter().zip(&kafka_ledgers) {
        let ledger = ledger.lock().unwrap().clone();
        assert!(ledger.len() > 20, "the Kafka producer into {topic} was answered: {}", ledger.len());
        cluster.check_ledger(&ledger, topic, &["0".into()]).await;
    }

    // A consumer works a data group's queue through a node that leads
    // none of it: its lease's id names the group, so renewing and acking
    // it reach that group.
    let queue = &queues[1];
    let path = format!("/api/v1/pop/queue/{queue}?consumerGroup=g&batch=2");
    let (status, popped) = cluster.call(0, reqwest::Method::GET, &path, None).await;
    assert_eq!(status, 200, "{popped}");
    let lease = popped["leaseId"].as_str().unwrap().to_string();
    let path = format!("/api/v1/lease/{lease}/extend");
    let (status, extended) = cluster.call(1, reqwest::Method::POST, &path, None).await;
    assert_eq!((status, extended["renewed"].as_u64()), (200, Some(1)), "{extended}");
    let m = &popped["messages"][0];
    let ack = serde_json::json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                 "leaseId": lease, "consumerGroup": "g"});
    let (status, acked) = cluster.call(1, reqwest::Method::POST, "/api/v1/ack", Some(ack)).await;
    assert_eq!((status, acked[0]["success"].as_bool()), (200, Some(true)), "{acked}");
    // What would span groups is refused, and names why.
    let spanning = serde_json::json!({"operations": [
        {"type": "push", "queue": queues[0], "payload": {}},
        {"type": "push", "queue": queues[1], "payload": {}},
    ]});
    let (status, refused) = cluster.call(0, reqwest::Method::POST, "/api/v1/transaction", Some(spanning)).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("transaction_spans_groups")), "{refused}");
    let path = format!("/api/v1/pop/queue/{queue}?consumerGroup=s&shared=true");
    let (status, refused) = cluster.call(0, reqwest::Method::GET, &path, None).await;
    assert_eq!((status, refused["code"].as_str()), (501, Some("unsupported")), "{refused}");

    // Back, node 3 catches up and is handed its preferred group again.
    cluster.start_node_with(2, &[]).await;
    let back = leaders_when(&cluster, Duration::from_secs(60), preferred).await;
    let terms: BTreeMap<usize, u64> = back.iter().map(|l| l.1).enumerate().collect();
    println!("leaders back where preferred, terms {terms:?}");
    let ledger = ledgers[1].lock().unwrap().clone();
    cluster.check_ledger(&ledger, &queues[1], &["p1".into()]).await;

    // SIGTERM hands over every group the node leads before it stops.
    let mut stopping = cluster.nodes[1].take().unwrap();
    stopping.terminate();
    let log = stopping.log_text();
    assert!(log.contains("handed leadership over before stopping"), "node 2 handed group 1 over:\n{log}");
    let handed = leaders_when(&cluster, Duration::from_secs(10), |l| l[1].0 != 2).await;
    assert_eq!((handed[0], handed[2], handed[3]), (back[0], back[2], back[3]), "the other groups kept their leaders");

    // Node 2 is replaced as recovery.md replaces a broken node, each change
    // made once and carried to every group: removed, started empty and
    // joining, added as a learner and promoted (refused while any group's
    // log is still being copied to it).
    let (status, removed) =
        cluster.call(0, reqwest::Method::DELETE, "/api/v1/system/raft/membership/members/2", None).await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(voters_of_each_group(&cluster).await, vec![vec![1, 3]; GROUPS], "node 2 left every group");
    let dir = cluster.dir(1);
    std::fs::rename(&dir, dir.with_extension("broken")).unwrap();
    let mut env = cluster.env[1].clone();
    env.push(("QUEEN_RAFT_JOIN".into(), "true".into()));
    cluster.nodes[1] = Some(start(&dir, &env).await);
    let membership = cluster.add_voter(0, 2, &cluster.raft_addr(1)).await;
    assert_eq!(membership["voters"], serde_json::json!([1, 2, 3]), "{membership}");
    assert_eq!(voters_of_each_group(&cluster).await, vec![vec![1, 2, 3]; GROUPS], "node 2 is back in every group");
    // The rebuilt node serves every group's data, and takes its group back.
    for (w, queue) in queues.iter().enumerate() {
        let ledger = ledgers[w].lock().unwrap().clone();
        cluster.check_ledger(&ledger, queue, &[format!("p{w}")]).await;
    }
    leaders_when(&cluster, Duration::from_secs(60), preferred).await;
}

/// Each group's voters, as the membership API shows them.
async fn voters_of_each_group(cluster: &Cluster) -> Vec<Vec<u64>> {
    let (status, view) = cluster.call(0, reqwest::Method::GET, "/api/v1/system/raft/membership", None).await;
    assert_eq!(status, 200, "{view}");
    let groups = view["groups"].as_array().unwrap();
    groups.iter().map(|g| serde_json::from_value(g["membership"]["voters"].clone()).unwrap()).collect()
}
