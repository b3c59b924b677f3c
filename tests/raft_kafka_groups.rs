//! Kafka consumer groups on a three-node cluster whose QUEEN_RAFT_PEERS name
//! each node's Kafka address: FindCoordinator through any node names the
//! raft leader at its Kafka address, the other nodes answer a group
//! member's requests NOT_COORDINATOR (so the client asks again and goes
//! there), and after the leader dies the coordinator moves with it.

mod common;

use common::cluster::start;
use common::free_port;
use common::kafka::KafkaConn;
use protocol::messages::{
    ApiKey, FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, RequestKind, ResponseKind,
};
use protocol::{ResponseError, StrBytes};
use serde_json::Value;
use std::time::{Duration, Instant};

/// (node id, port) FindCoordinator through `port` names for group `g`.
async fn coordinator(port: u16) -> (i32, i32) {
    let mut conn = KafkaConn::connect(port).await;
    let ask = FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g")).with_key_type(0);
    let ResponseKind::FindCoordinator(r) =
        conn.call(ApiKey::FindCoordinator, 3, RequestKind::FindCoordinator(ask)).await
    else {
        panic!("not a FindCoordinator answer")
    };
    assert_eq!(r.error_code, 0);
    (r.node_id.0, r.port)
}

/// The error code of a JoinGroup and a Heartbeat for group `g` through `port`.
async fn group_calls(port: u16) -> (i16, i16) {
    let mut conn = KafkaConn::connect(port).await;
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"));
    let ResponseKind::JoinGroup(j) = conn.call(ApiKey::JoinGroup, 5, RequestKind::JoinGroup(join)).await else {
        panic!("not a JoinGroup answer")
    };
    let beat = HeartbeatRequest::default().with_group_id(GroupId(StrBytes::from_static_str("g"))).with_generation_id(1);
    let ResponseKind::Heartbeat(h) = conn.call(ApiKey::Heartbeat, 3, RequestKind::Heartbeat(beat)).await else {
        panic!("not a Heartbeat answer")
    };
    (j.error_code, h.error_code)
}

/// The index of the node every running node names as leader.
async fn agreed(nodes: &[Option<common::Node>]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut named = Vec::new();
        for n in nodes.iter().flatten() {
            let health: Value = n.http.get(n.url("/health")).send().await.unwrap().json().await.unwrap();
            named.push(health["raft"]["leader"].as_u64());
        }
        if let Some(Some(l)) = named.first().copied() {
            if named.iter().all(|n| *n == Some(l)) {
                return l as usize - 1;
            }
        }
        assert!(Instant::now() < deadline, "no leader agreed: {named:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_raft_leader_coordinates_every_group_and_the_others_send_members_there() {
    let tmp = tempfile::tempdir().unwrap();
    let raft: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let kafka: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let peers: Vec<String> =
        (0..3).map(|i| format!("{}=127.0.0.1:{}//127.0.0.1:{}", i + 1, raft[i], kafka[i])).collect();
    let peers = peers.join(",");
    let mut nodes = Vec::new();
    for i in 0..3 {
        let env: Vec<(String, String)> = [
            ("QUEEN_RAFT_NODE_ID", (i + 1).to_string()),
            ("QUEEN_RAFT_PEERS", peers.clone()),
            ("QUEEN_RAFT_ADDR", format!("127.0.0.1:{}", raft[i])),
            ("QUEEN_KAFKA_ADDR", format!("127.0.0.1:{}", kafka[i])),
            ("QUEEN_RAFT_TOKEN", "groups-test".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        nodes.push(Some(start(&tmp.path().join(format!("node-{}", i + 1)), &env).await));
    }
    let leader = agreed(&nodes).await;

    // Every node names the leader, at its Kafka address.
    for port in &kafka {
        assert_eq!(coordinator(*port).await, (leader as i32 + 1, kafka[leader] as i32));
    }
    // The leader takes a member's calls; the others send it there.
    let not_coordinator = ResponseError::NotCoordinator.code();
    for (i, port) in kafka.iter().enumerate() {
        let (join, beat) = group_calls(*port).await;
        if i == leader {
            assert_ne!(join, not_coordinator, "the leader refused a JoinGroup");
        } else {
            assert_eq!((join, beat), (not_coordinator, not_coordinator), "node {} coordinated a group", i + 1);
        }
    }

    // The leader dies: the coordinator moves to the next one.
    nodes[leader].as_mut().unwrap().kill9();
    nodes[leader] = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    let next = loop {
        let next = agreed(&nodes).await;
        if next != leader {
            break next;
        }
        assert!(Instant::now() < deadline, "no new leader after the kill");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (i, port) in kafka.iter().enumerate().filter(|(i, _)| *i != leader) {
        assert_eq!(coordinator(*port).await, (next as i32 + 1, kafka[next] as i32), "through node {}", i + 1);
    }
}
