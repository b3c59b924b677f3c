//! The crash test of the Kafka path: concurrent producers (acks=-1) keep a
//! ledger of every acknowledged record while the node is killed with SIGKILL
//! and restarted. After each restart every acknowledged record is at its
//! acknowledged offset, offsets are gapless, nothing is stored twice, and a
//! produce that was never answered is stored wholly or not at all. One
//! writer's batches are large enough to be fetched from their files by
//! sendfile, and a consumer fetches them so while the node is killed.

mod common;

use common::crash::{kill_rounds, Ledger, Rounds};
use common::kafka::{batch, fetch, KafkaConn};
use common::Node;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{ApiKey, ProduceRequest, RequestKind, ResponseKind, TopicName};
use protocol::StrBytes;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const TOPIC: &str = "kafka-crash";
const PARTITIONS: i32 = 3;
const WRITERS: usize = 8;

/// Where a record was acknowledged: (partition, offset), by value.
type At = (i32, u64);

fn rounds() -> usize {
    std::env::var("QUEEN_KAFKA_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_under_concurrent_kafka_produce_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let node = Node::start(&dir, &[("QUEEN_KAFKA_NUM_PARTITIONS", "3")]).await;
    let n = rounds();
    let rounds = Rounds { kills: n, writers: WRITERS, pause_ms: 100..500, seed: 11 };
    let writer = |node: &Node, ledger, round, w| match w {
        0 => tokio::spawn(fetch_until_killed(node.kafka_port)),
        _ => tokio::spawn(produce_until_killed(node.kafka_port, ledger, round, w)),
    };
    let (_node, ledger) = kill_rounds(node, rounds, writer, verify).await;
    let acked = ledger.acked.len();
    assert!(acked > 50 * n, "the producers got too few acknowledgements to mean anything: {acked}");
    eprintln!("{n} kills, {acked} acknowledged records, all intact");
}

async fn produce_until_killed(port: u16, ledger: Arc<Mutex<Ledger<At>>>, round: usize, writer: usize) {
    let mut conn = KafkaConn::connect(port).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64((round * 1000 + writer) as u64);
    for seq in 0.. {
        let partition = rng.gen_range(0..PARTITIONS);
        // Writer 1's batches, over 20 KB, are sent from their files by sendfile.
        let (count, pad) = if writer == 1 { (20, 1000) } else { (rng.gen_range(1..=4), 0) };
        let values: Vec<String> =
            (0..count).map(|i| format!("r{round}-w{writer}-s{seq}-i{i}-{}", "p".repeat(pad))).collect();
        let data = PartitionProduceData::default().with_index(partition).with_records(Some(batch(-1, -1, -1, &values)));
        let topic = TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![data]);
        let request = ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_topic_data(vec![topic]);
        let bytes = protocol::request::encode(ApiKey::Produce, 9, seq, &RequestKind::Produce(request)).unwrap();
        conn.send_raw(&bytes).await;
        let answer = match conn.read_frame().await {
            Some(frame) => protocol::response::decode(ApiKey::Produce, 9, frame).unwrap().1,
            None => {
                ledger.lock().unwrap().unanswered.push(values);
                return;
            }
        };
        let ResponseKind::Produce(r) = answer else { panic!("not a produce answer") };
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0, "produce refused: {p:?}");
        let mut l = ledger.lock().unwrap();
        for (i, v) in values.into_iter().enumerate() {
            l.acked.insert(v, (partition, p.base_offset as u64 + i as u64));
        }
    }
}

/// Fetches every partition from its start, over and over, until the node
/// is killed: each answer's record sets decode (their CRCs included).
async fn fetch_until_killed(port: u16) {
    let mut conn = KafkaConn::connect(port).await;
    for correlation in 0.. {
        for partition in 0..PARTITIONS {
            let request = fetch(TOPIC, partition, 0, 0, 0);
            let bytes = protocol::request::encode(ApiKey::Fetch, 12, correlation, &request).unwrap();
            conn.send_raw(&bytes).await;
            let Some(frame) = conn.read_frame().await else { return };
            let (_, answer) = protocol::response::decode(ApiKey::Fetch, 12, frame).unwrap();
            let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer") };
            let p = &r.responses[0].partitions[0];
            if let Some(records) = p.records.clone().filter(|r| !r.is_empty()) {
                protocol::records::decode_fetched(records).expect("a fetched record set decodes");
            }
        }
    }
}

async fn verify(node: &Node, ledger: &Ledger<At>) {
    let mut found: HashMap<String, At> = HashMap::new();
    for partition in 0..PARTITIONS {
        let read = node.read_all(TOPIC, &partition.to_string()).await;
        for (i, (offset, _, value)) in read.records.iter().enumerate() {
            assert_eq!(*offset, i as u64, "offsets of partition {partition} have a gap");
            let value = value.as_str().expect("a produced value reads back as text").to_string();
            assert!(found.insert(value.clone(), (partition, *offset)).is_none(), "{value} is stored twice");
        }
        assert_eq!(read.records.len() as u64, read.high_watermark, "partition {partition} reads short");
    }
    ledger.check(&found);
}
