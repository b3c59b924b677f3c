//! `queen cluster --nodes 3`: three nodes on loopback from one command, on
//! consecutive ports; a write through one is read through another, and
//! SIGTERM to the command stops every node.

mod common;

use common::{free_ports_in_a_row, push_body, BIN};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_command_starts_three_nodes_that_replicate_and_stops_them_on_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let (http, kafka, raft) = (free_ports_in_a_row(3), free_ports_in_a_row(3), free_ports_in_a_row(3));
    let mut launcher = Command::new(BIN)
        .args(["cluster", "--nodes", "3", "--dir"])
        .arg(tmp.path())
        .args(["--http-port", &http.to_string(), "--kafka-port", &kafka.to_string(), "--raft-port", &raft.to_string()])
        .env_remove("QUEEN_RAFT_TOKEN")
        // Not a disk-gate test: a shared machine's volume may be past 85 %.
        .env("QUEEN_STORAGE_FULL_PCT", "99")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let url = |i: u16, path: &str| format!("http://127.0.0.1:{}{path}", http + i);

    // Every node comes up and names the same leader.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut leaders = Vec::new();
        for i in 0..3 {
            let health = client.get(url(i, "/health")).send().await;
            let health: Option<Value> = match health {
                Ok(r) => r.json().await.ok(),
                Err(_) => None,
            };
            leaders.push(health.and_then(|h| h["raft"]["leader"].as_u64()));
        }
        if leaders.iter().all(|l| l.is_some() && *l == leaders[0]) {
            break;
        }
        assert!(Instant::now() < deadline, "the nodes did not agree on a leader: {leaders:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let body = push_body(&[("local".into(), "p".into(), "t1".into(), json!({"hello": "cluster"}))]);
    let r = client.post(url(1, "/api/v1/push")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
    let fetch = json!({"entries": [{"queue": "local", "partition": "p", "offset": 0}]});
    let read: Value = client.post(url(2, "/api/v1/fetch")).json(&fetch).send().await.unwrap().json().await.unwrap();
    assert_eq!(read["entries"][0]["records"][0]["transactionId"], "t1", "{read}");
    assert!(tmp.path().join("node-3").join("qlog").exists(), "node 3's data is under DIR/node-3");

    unsafe { libc::kill(launcher.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = launcher.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the launcher did not stop its nodes");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    for i in 0..3 {
        assert!(client.get(url(i, "/health")).send().await.is_err(), "node {} still answers", i + 1);
    }
    let mut out = String::new();
    std::io::Read::read_to_string(launcher.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(out.matches("stopped").count(), 3, "{out}");
}
