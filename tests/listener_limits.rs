//! What a hostile or careless client can hold on either listener: a request
//! or header trickled a byte at a time, idle connections, more connections
//! than the cap or the file descriptors, compressed batches expanding
//! together. Each is cut or refused while a normal client is served.

mod common;

use bytes::Bytes;
use common::kafka::KafkaConn;
use common::Node;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{ApiKey, ProduceRequest, RequestKind, ResponseKind, TopicName};
use protocol::records::{encode_produced, Compression, PlainRecord, ProducedBatch};
use protocol::StrBytes;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// A client that writes `first`, then, when `trickle`, one more byte every
/// 200 ms; answers how long after connecting the node closed the connection,
/// or None if it was still open after `within`.
fn slow_client(port: u16, first: &'static [u8], trickle: bool, within: Duration) -> JoinHandle<Option<Duration>> {
    tokio::spawn(async move {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let start = Instant::now();
        stream.write_all(first).await.unwrap();
        let mut buf = [0u8; 1024];
        let mut tick = tokio::time::interval_at(
            tokio::time::Instant::now() + Duration::from_millis(200),
            Duration::from_millis(200),
        );
        loop {
            tokio::select! {
                read = stream.read(&mut buf) => if matches!(read, Ok(0) | Err(_)) { return Some(start.elapsed()) },
                _ = tick.tick(), if trickle => if stream.write_all(b"a").await.is_err() { return Some(start.elapsed()) },
                _ = tokio::time::sleep_until((start + within).into()) => return None,
            }
        }
    })
}

async fn api_versions(conn: &mut KafkaConn) {
    let answer = conn.call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(Default::default())).await;
    assert!(matches!(answer, ResponseKind::ApiVersions(r) if r.error_code == 0));
}

/// A Kafka frame begun (100 bytes declared, one sent).
const PARTIAL_FRAME: &[u8] = &[0, 0, 0, 100, 0];
/// An HTTP request whose headers never end.
const PARTIAL_HEADERS: &[u8] = b"GET /health HTTP/1.1\r\nHost: queen\r\nX-Slow: ";

#[tokio::test]
async fn a_kafka_request_trickled_is_cut_after_the_read_timeout_and_an_idle_connection_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("QUEEN_KAFKA_REQUEST_READ_TIMEOUT_MS", "1000"), ("QUEEN_KAFKA_CONNECTIONS_MAX_IDLE_MS", "2000")];
    let node = Node::start(dir.path(), &env).await;
    let slow = slow_client(node.kafka_port, PARTIAL_FRAME, true, Duration::from_secs(5));
    let idle = slow_client(node.kafka_port, b"", false, Duration::from_secs(5));

    // A normal client, asking every half second, is served throughout and
    // never idle long enough to be cut.
    let mut normal = KafkaConn::connect(node.kafka_port).await;
    for _ in 0..6 {
        api_versions(&mut normal).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    api_versions(&mut normal).await;

    let slow = slow.await.unwrap().expect("the trickling client is cut");
    assert!(slow >= Duration::from_millis(900) && slow < Duration::from_millis(2000), "cut after {slow:?}");
    let idle = idle.await.unwrap().expect("the idle client is cut");
    assert!(idle >= Duration::from_millis(1900) && idle < Duration::from_millis(3000), "cut after {idle:?}");
}

#[tokio::test]
async fn http_headers_trickled_are_cut_after_the_header_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), &[("QUEEN_HTTP_HEADER_READ_TIMEOUT_MS", "1000")]).await;
    let slow = slow_client(node.port, PARTIAL_HEADERS, true, Duration::from_secs(5));
    for _ in 0..4 {
        assert_eq!(reqwest::get(node.url("/health")).await.unwrap().status(), 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let slow = slow.await.unwrap().expect("the trickling client is cut");
    assert!(slow >= Duration::from_millis(900) && slow < Duration::from_millis(2000), "cut after {slow:?}");
}

#[tokio::test]
async fn http_connections_past_the_cap_are_closed_and_logged_once_per_interval() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), &[("QUEEN_HTTP_MAX_CONNECTIONS", "8")]).await;
    // The harness's own pooled connection may hold one place.
    let held: Vec<_> = (0..8).map(|_| slow_client(node.port, b"", false, Duration::from_secs(3))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let over: Vec<_> = (0..30).map(|_| slow_client(node.port, b"", false, Duration::from_secs(2))).collect();
    for c in over {
        let cut = c.await.unwrap().expect("a connection past the cap is closed");
        assert!(cut < Duration::from_millis(500), "closed after {cut:?}");
    }
    let mut still_open = 0;
    for c in held {
        still_open += c.await.unwrap().is_none() as usize;
    }
    assert!(still_open >= 7, "the connections within the cap are kept ({still_open} of 8)");
    let lines = node.log_text().matches("connection refused: too many open").count();
    assert_eq!(lines, 1, "30 refusals in one interval log one line:\n{}", node.log_text());
    // Places freed, a new client is served. The node frees a place when it
    // sees the held connection close, a moment after the client dropped it:
    // a client that comes first is still cut, so it asks again.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let status = loop {
        match reqwest::get(node.url("/health")).await {
            Ok(answer) => break answer.status(),
            Err(e) if std::time::Instant::now() < deadline => {
                eprintln!("cut before the places freed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("no place freed within 2 s: {e}"),
        }
    };
    assert_eq!(status, 200);
}

/// Issue 12's "with `ulimit -n 1024`, 2,000 slow clients are cut after the
/// timeout while a normal client is served": the node's descriptors run out,
/// `accept` fails with EMFILE and backs off, the slow clients wait in the
/// kernel's backlog and are taken and cut as descriptors free up.
#[tokio::test]
async fn two_thousand_slow_clients_under_a_1024_descriptor_limit_are_cut_while_a_normal_client_is_served() {
    raise_own_descriptor_limit(8192);
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("QUEEN_KAFKA_REQUEST_READ_TIMEOUT_MS", "1500"),
        ("QUEEN_KAFKA_CONNECTIONS_MAX_IDLE_MS", "1500"),
        ("QUEEN_HTTP_HEADER_READ_TIMEOUT_MS", "1500"),
    ];
    let node = Node::start(dir.path(), &env).await;
    let limit = libc::rlimit { rlim_cur: 1024, rlim_max: 1024 };
    assert_eq!(unsafe { libc::prlimit(node.child.id() as i32, libc::RLIMIT_NOFILE, &limit, std::ptr::null_mut()) }, 0);

    let within = Duration::from_secs(30);
    let slow: Vec<_> = (0..2000)
        .map(|i| match i % 2 {
            0 => slow_client(node.kafka_port, PARTIAL_FRAME, false, within),
            _ => slow_client(node.port, PARTIAL_HEADERS, false, within),
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let started = Instant::now();
    let normal = async {
        let mut conn = KafkaConn::connect(node.kafka_port).await;
        api_versions(&mut conn).await;
        let fresh = reqwest::Client::new();
        assert_eq!(fresh.get(node.url("/health")).send().await.unwrap().status(), 200);
    };
    tokio::time::timeout(Duration::from_secs(20), normal).await.expect("a normal client is served");
    let served_after = started.elapsed();

    for (i, c) in slow.into_iter().enumerate() {
        assert!(c.await.unwrap().is_some(), "slow client {i} is cut");
    }
    assert!(node.child.id() > 0 && unsafe { libc::kill(node.child.id() as i32, 0) } == 0, "the node lives");
    let log = node.log_text();
    let failed = log.matches("accept failed").count();
    assert!(failed >= 1, "the node ran out of descriptors, as the test means it to:\n{log}");
    assert!(failed <= 10, "accept failures are logged once per interval, not {failed} times");
    assert!(!log.contains("FATAL"), "{log}");
    eprintln!("normal client served after {served_after:?}; {failed} accept-failure lines");
}

fn raise_own_descriptor_limit(want: u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
    limit.rlim_cur = limit.rlim_max;
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    assert!(limit.rlim_cur >= want, "this test needs {want} descriptors; the hard limit is {}", limit.rlim_max);
}

/// Sixteen produce requests at once, each with eight partitions of zstd
/// batches that expand to 6 MB apiece: one request may expand to at most
/// QUEEN_KAFKA_MAX_REQUEST_BYTES all together and all of them to at most
/// QUEEN_DECOMPRESS_BUDGET_BYTES, so the node's peak resident memory stays
/// far below the 16 × 48 MB the batches ask for.
#[tokio::test]
async fn concurrent_compressed_produces_stay_within_the_decompression_budget() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("QUEEN_DECOMPRESS_BUDGET_BYTES", "33554432"),
        ("QUEEN_KAFKA_MAX_REQUEST_BYTES", "8388608"),
        ("QUEEN_KAFKA_NUM_PARTITIONS", "8"),
    ];
    let node = Node::start(dir.path(), &env).await;
    let record =
        PlainRecord { timestamp_ms: 1, key: None, value: Some(Bytes::from(vec![0u8; 1_000_000])), headers: vec![] };
    let batch = ProducedBatch {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        transactional: false,
        records: vec![record; 6],
        wire: Bytes::new(),
    };
    let records = encode_produced(&batch, Compression::Zstd).unwrap();
    assert!(records.len() < 10_000, "a batch is a few KB on the wire ({} bytes)", records.len());
    let partitions = (0..8).map(|p| PartitionProduceData::default().with_index(p).with_records(Some(records.clone())));
    let topic = TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_static_str("bombs")))
        .with_partition_data(partitions.collect());
    let request = ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![topic]);
    // The topic exists before the requests race to it.
    api_versions(&mut KafkaConn::connect(node.kafka_port).await).await;
    let mut first = KafkaConn::connect(node.kafka_port).await;
    first.call(ApiKey::Produce, 9, RequestKind::Produce(request.clone())).await;

    let producers = (0..16).map(|_| {
        let request = request.clone();
        let port = node.kafka_port;
        tokio::spawn(async move {
            let mut conn = KafkaConn::connect(port).await;
            let ResponseKind::Produce(answer) = conn.call(ApiKey::Produce, 9, RequestKind::Produce(request)).await
            else {
                panic!("not a produce answer")
            };
            answer.responses[0].partition_responses.iter().map(|p| p.error_code).collect::<Vec<_>>()
        })
    });
    let mut answers = Vec::new();
    for p in producers.collect::<Vec<_>>() {
        answers.push(p.await.unwrap());
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", node.child.id())).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(peak_kb < 250 * 1024, "peak resident {peak_kb} kB");
    for codes in answers {
        assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "one 6 MB batch fits the 8 MB per request: {codes:?}");
        assert!(codes.iter().all(|c| *c == 0 || *c == 2), "the rest are CORRUPT_MESSAGE: {codes:?}");
    }
    api_versions(&mut KafkaConn::connect(node.kafka_port).await).await;
    assert_eq!(reqwest::get(node.url("/health")).await.unwrap().status(), 200);
    eprintln!("peak resident {} MB", peak_kb / 1024);
}
