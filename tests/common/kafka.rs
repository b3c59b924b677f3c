//! A minimal Kafka client over the `protocol` crate's codec, for tests that
//! need exact bytes on the wire (bad frames, chosen producer ids and
//! sequences) that a real client library would never send.

use bytes::{Bytes, BytesMut};
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{
    ApiKey, InitProducerIdRequest, ProduceRequest, ProducerId, RequestKind, ResponseKind, TopicName,
};
use protocol::records::{encode_produced, Compression, PlainRecord, ProducedBatch};
use protocol::StrBytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A byte stream to the node: plain TCP or TLS.
pub trait Duplex: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Duplex for S {}

pub struct KafkaConn {
    stream: Box<dyn Duplex>,
    buf: BytesMut,
    next_correlation: i32,
}

impl KafkaConn {
    pub async fn connect(port: u16) -> KafkaConn {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect to the Kafka listener");
        KafkaConn::over(stream)
    }

    /// A connection over a stream already open (a TLS session).
    pub fn over(stream: impl Duplex + 'static) -> KafkaConn {
        KafkaConn { stream: Box::new(stream), buf: BytesMut::new(), next_correlation: 1 }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write a request");
    }

    /// The next response frame, or None once the node closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Ok(Some(frame)) = protocol::frame::split_frame(&mut self.buf, usize::MAX >> 1) {
                return Some(frame);
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// A connection to `host:port`, or none when it cannot be made.
    pub async fn try_connect(host: &str, port: u16) -> Option<KafkaConn> {
        let connect = TcpStream::connect((host, port));
        let stream = tokio::time::timeout(Duration::from_secs(2), connect).await.ok()?.ok()?;
        Some(KafkaConn::over(stream))
    }

    /// As `call`, answering none when the connection closes, the answer
    /// does not come within `within`, or does not decode.
    pub async fn try_call(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: RequestKind,
        within: Duration,
    ) -> Option<ResponseKind> {
        let correlation = self.next_correlation;
        self.next_correlation += 1;
        let bytes = protocol::request::encode(api_key, version, correlation, &body).ok()?;
        self.stream.write_all(&bytes).await.ok()?;
        let frame = tokio::time::timeout(within, self.read_frame()).await.ok()??;
        let (got, answer) = protocol::response::decode(api_key, version, frame).ok()?;
        (got == correlation).then_some(answer)
    }

    pub async fn call(&mut self, api_key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
        let correlation = self.next_correlation;
        self.next_correlation += 1;
        let bytes = protocol::request::encode(api_key, version, correlation, &body).expect("encode a request");
        self.send_raw(&bytes).await;
        let frame = self.read_frame().await.expect("an answer before the connection closed");
        let (got, answer) = protocol::response::decode(api_key, version, frame).expect("decode the answer");
        assert_eq!(got, correlation, "answers come in request order");
        answer
    }
}

/// Record-batch bytes for `values`, as a producer with (id, epoch, base
/// sequence) sends them; id -1 for a producer without idempotence.
pub fn batch(producer_id: i64, epoch: i16, base_sequence: i32, values: &[String]) -> Bytes {
    let records = values
        .iter()
        .map(|v| PlainRecord { timestamp_ms: 1, key: None, value: Some(Bytes::from(v.clone())), headers: vec![] })
        .collect();
    let batch = ProducedBatch {
        producer_id,
        producer_epoch: epoch,
        base_sequence,
        transactional: false,
        records,
        wire: Bytes::new(),
    };
    encode_produced(&batch, Compression::None).expect("encode a batch")
}

/// Two batches of `per_batch` distinct values of 1000 bytes produced to
/// partition 0 of `topic`, each large enough to be sent from its file, and
/// the one fetch from offset 0 that reads both back: (a batch as produced,
/// the fetched record set).
pub async fn two_large_batches(conn: &mut KafkaConn, topic: &str, per_batch: usize) -> (Bytes, Bytes) {
    let values: Vec<String> = (0..per_batch).map(|i| format!("{i:04}").repeat(250)).collect();
    let produced_bytes = batch(-1, -1, -1, &values);
    for base in [0, per_batch as i64] {
        let answer = conn.call(ApiKey::Produce, 9, produce(topic, 0, produced_bytes.clone())).await;
        assert_eq!(produced(answer), (0, base));
    }
    let answer = conn.call(ApiKey::Fetch, 12, fetch(topic, 0, 0, 0, 0)).await;
    let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer: {answer:?}") };
    (produced_bytes, r.responses[0].partitions[0].records.clone().unwrap())
}

/// A produce of `records` to one partition, acks=all.
pub fn produce(topic: &str, partition: i32, records: Bytes) -> RequestKind {
    let data = PartitionProduceData::default().with_index(partition).with_records(Some(records));
    let topic = TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partition_data(vec![data]);
    RequestKind::Produce(ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_topic_data(vec![topic]))
}

/// A fetch of one partition from `offset`, up to 1 MiB.
pub fn fetch(topic: &str, partition: i32, offset: i64, min_bytes: i32, max_wait_ms: i32) -> RequestKind {
    use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let p =
        FetchPartition::default().with_partition(partition).with_fetch_offset(offset).with_partition_max_bytes(1 << 20);
    let t =
        FetchTopic::default().with_topic(TopicName(StrBytes::from_string(topic.to_string()))).with_partitions(vec![p]);
    RequestKind::Fetch(
        protocol::messages::FetchRequest::default()
            .with_replica_id(protocol::messages::BrokerId(-1))
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(min_bytes)
            .with_max_bytes(1 << 20)
            .with_topics(vec![t]),
    )
}

/// (error code, base offset) of the one partition a produce answered.
pub fn produced(answer: ResponseKind) -> (i16, i64) {
    let ResponseKind::Produce(r) = answer else { panic!("not a produce answer: {answer:?}") };
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// An idempotent producer (acks=all) that writes one record at a time to
/// partition 0 of `topic` through the brokers `at` (host, port) until
/// `stop`, moving to the next broker whenever one fails or answers an
/// error, and retrying the same sequence there (the broker's dedup answers
/// a retry of a written record with its offset). Records each acknowledged
/// record in `ledger` under the transactionId Queen stores it by
/// (`kafka:ID:EPOCH:SEQUENCE`), in partition "0". Answers the retries.
pub async fn idempotent_writer(
    at: Vec<(String, u16)>,
    topic: &str,
    ledger: Arc<std::sync::Mutex<std::collections::HashMap<String, (String, u64)>>>,
    stop: Arc<AtomicBool>,
) -> u64 {
    let within = Duration::from_secs(10);
    let mut turn = 0;
    let mut retried = 0;
    let mut pid = None;
    let mut seq = 0;
    while !stop.load(Ordering::Acquire) {
        let (host, port) = &at[turn % at.len()];
        let Some(mut conn) = KafkaConn::try_connect(host, *port).await else {
            turn += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if pid.is_none() {
            let init = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            match conn.try_call(ApiKey::InitProducerId, 4, RequestKind::InitProducerId(init), within).await {
                Some(ResponseKind::InitProducerId(r)) if r.error_code == 0 => pid = Some(r.producer_id.0),
                _ => {
                    turn += 1;
                    continue;
                }
            }
        }
        let id = pid.expect("set above");
        while !stop.load(Ordering::Acquire) {
            let records = batch(id, 0, seq, &[format!("k{seq}")]);
            match conn.try_call(ApiKey::Produce, 9, produce(topic, 0, records), within).await.map(produced) {
                Some((0, offset)) => {
                    ledger.lock().unwrap().insert(format!("kafka:{id}:0:{seq}"), ("0".into(), offset as u64));
                    seq += 1;
                }
                _ => {
                    retried += 1;
                    turn += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    break;
                }
            }
        }
    }
    retried
}
