//! The crash test of the Kafka path: concurrent producers (acks=-1) keep a
//! ledger of every acknowledged record while the node is killed with SIGKILL
//! and restarted. After each restart every acknowledged record is at its
//! acknowledged offset, offsets are gapless, nothing is stored twice, and a
//! produce that was never answered is stored wholly or not at all.

mod common;

use common::kafka::{batch, KafkaConn};
use common::Node;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{ApiKey, ProduceRequest, RequestKind, ResponseKind, TopicName};
use protocol::StrBytes;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOPIC: &str = "kafka-crash";
const PARTITIONS: i32 = 3;
const WRITERS: usize = 8;

#[derive(Default)]
struct Ledger {
    /// value → (partition, offset) of every acknowledged record.
    acked: HashMap<String, (i32, u64)>,
    unanswered: Vec<Vec<String>>,
}

fn rounds() -> usize {
    std::env::var("QUEEN_KAFKA_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_under_concurrent_kafka_produce_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let env = [("QUEEN_KAFKA_NUM_PARTITIONS", "3")];
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut node = Node::start(&dir, &env).await;
    let n = rounds();
    for round in 0..n {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| tokio::spawn(produce_until_killed(node.kafka_port, ledger.clone(), round, w)))
            .collect();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(100..500))).await;
        node.kill9();
        for w in writers {
            w.await.unwrap();
        }
        node = node.restart().await;
        let snapshot = std::mem::take(&mut *ledger.lock().unwrap());
        verify(&node, &snapshot).await;
        *ledger.lock().unwrap() = snapshot;
    }
    let acked = ledger.lock().unwrap().acked.len();
    assert!(acked > 50 * n, "the producers got too few acknowledgements to mean anything: {acked}");
    eprintln!("{n} kills, {acked} acknowledged records, all intact");
}

async fn produce_until_killed(port: u16, ledger: Arc<Mutex<Ledger>>, round: usize, writer: usize) {
    let mut conn = KafkaConn::connect(port).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64((round * 1000 + writer) as u64);
    for seq in 0.. {
        let partition = rng.gen_range(0..PARTITIONS);
        let values: Vec<String> =
            (0..rng.gen_range(1..=4)).map(|i| format!("r{round}-w{writer}-s{seq}-i{i}")).collect();
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

async fn verify(node: &Node, ledger: &Ledger) {
    let mut found: HashMap<String, (i32, u64)> = HashMap::new();
    for partition in 0..PARTITIONS {
        let read = node.read_all(TOPIC, &partition.to_string()).await;
        for (i, (offset, _, value)) in read.records.iter().enumerate() {
            assert_eq!(*offset, i as u64, "offsets of partition {partition} have a gap");
            let value = value.as_str().expect("a produced value reads back as text").to_string();
            assert!(found.insert(value.clone(), (partition, *offset)).is_none(), "{value} is stored twice");
        }
        assert_eq!(read.records.len() as u64, read.high_watermark, "partition {partition} reads short");
    }
    for (value, at) in &ledger.acked {
        assert_eq!(found.get(value), Some(at), "acknowledged record {value} is not where it was acknowledged");
    }
    for values in &ledger.unanswered {
        let present = values.iter().filter(|v| found.contains_key(*v)).count();
        assert!(present == 0 || present == values.len(), "an unanswered produce is partly stored");
    }
}
