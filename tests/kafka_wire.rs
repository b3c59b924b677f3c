//! The Kafka listener at the byte level: bad frames and unsupported
//! versions get the protocol's own answer or close only their connection;
//! an idempotent producer's retry is deduplicated across a kill -9.

mod common;

use common::kafka::{batch, fetch, produce, produced, two_large_batches, KafkaConn};
use common::Node;
use protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, ApiVersionsRequest, InitProducerIdRequest, ProducerId, RequestKind,
    ResponseKind, TopicName,
};
use protocol::{ResponseError, StrBytes};

async fn api_versions_ok(port: u16) {
    let mut conn = KafkaConn::connect(port).await;
    let ResponseKind::ApiVersions(r) =
        conn.call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(Default::default())).await
    else {
        panic!("not an ApiVersions answer")
    };
    assert_eq!(r.error_code, 0);
    assert!(r.api_keys.iter().any(|k| k.api_key == ApiKey::Produce as i16));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_versions_and_bad_frames_get_answers_or_close_only_their_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[("QUEEN_KAFKA_MAX_REQUEST_BYTES", "4096")]).await;
    let port = node.kafka_port;

    // ApiVersions at a version nobody serves: v0's layout, error 35, the table.
    let mut conn = KafkaConn::connect(port).await;
    let request =
        protocol::request::encode(ApiKey::ApiVersions, 3, 7, &RequestKind::ApiVersions(ApiVersionsRequest::default()))
            .unwrap();
    let mut bytes = request.to_vec();
    bytes[6..8].copy_from_slice(&99i16.to_be_bytes());
    conn.send_raw(&bytes).await;
    let frame = conn.read_frame().await.expect("an answer");
    let (correlation, answer) = protocol::response::decode(ApiKey::ApiVersions, 0, frame).unwrap();
    let ResponseKind::ApiVersions(r) = answer else { panic!("not an ApiVersions answer") };
    assert_eq!((correlation, r.error_code), (7, ResponseError::UnsupportedVersion.code()));
    assert!(r.api_keys.iter().any(|k| k.api_key == ApiKey::Fetch as i16 && k.max_version == 16));

    // A refused version (AddPartitionsToTxn v4, the brokers' verification
    // form) answers UNSUPPORTED_VERSION in its own layout.
    let asked = RequestKind::AddPartitionsToTxn(AddPartitionsToTxnRequest::default());
    let ResponseKind::AddPartitionsToTxn(r) = conn.call(ApiKey::AddPartitionsToTxn, 4, asked).await else {
        panic!("not an AddPartitionsToTxn answer")
    };
    assert_eq!(r.error_code, ResponseError::UnsupportedVersion.code());

    // Frames no answer can be given to close their own connection, nothing else.
    let unknown_api = [0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
    let truncated_metadata = [0, 0, 0, 9, 0, 3, 0, 1, 0, 0, 0, 2, 0];
    let oversized = [0, 0, 0x10, 0x01];
    let too_short = [0, 0, 0, 2, 0, 3];
    for bad in [&unknown_api[..], &truncated_metadata, &oversized, &too_short] {
        let mut conn = KafkaConn::connect(port).await;
        conn.send_raw(bad).await;
        assert!(conn.read_frame().await.is_none(), "{bad:?} closes its connection");
        api_versions_ok(port).await;
    }
    assert!(node.log_text().contains("kafka connection closed"), "each closing is logged");
    let (status, _) =
        node.post("/api/v1/push", &common::push_body(&[("q".into(), "p".into(), "t".into(), 1.into())])).await;
    assert_eq!(status, 201, "HTTP keeps serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_retry_after_kill9_answers_the_original_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let init = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let ResponseKind::InitProducerId(r) =
        conn.call(ApiKey::InitProducerId, 4, RequestKind::InitProducerId(init.clone())).await
    else {
        panic!("not an InitProducerId answer")
    };
    assert_eq!(r.error_code, 0);
    let pid = r.producer_id.0;

    let first: Vec<String> = (0..5).map(|i| format!("a{i}")).collect();
    assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(pid, 0, 0, &first))).await), (0, 0));
    let second: Vec<String> = (5..8).map(|i| format!("a{i}")).collect();
    assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(pid, 0, 5, &second))).await), (0, 5));
    // A batch that skips sequences is refused.
    let (code, _) = produced(conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(pid, 0, 20, &second))).await);
    assert_eq!(code, ResponseError::OutOfOrderSequenceNumber.code());

    node.kill9();
    let node = node.restart().await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    // The retries of both batches land on their first offsets; nothing is written twice.
    assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(pid, 0, 0, &first))).await), (0, 0));
    assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(pid, 0, 5, &second))).await), (0, 5));
    // The restarted node knows where the producer stands: a gap is refused
    // on its first batch too, not taken as it comes.
    let (code, _) = produced(conn.call(ApiKey::Produce, 9, produce("idem", 0, batch(pid, 0, 20, &second))).await);
    assert_eq!(code, ResponseError::OutOfOrderSequenceNumber.code(), "a gap after a restart was written");
    let read = node.read_all("idem", "0").await;
    assert_eq!(read.high_watermark, 8);
    let values: Vec<String> = read.records.iter().map(|(_, _, v)| v.as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(values, (0..8).map(|i| format!("a{i}")).collect::<Vec<_>>());

    // A new producer id never repeats one handed out before the kill.
    let ResponseKind::InitProducerId(r) = conn.call(ApiKey::InitProducerId, 4, RequestKind::InitProducerId(init)).await
    else {
        panic!("not an InitProducerId answer")
    };
    assert!(r.producer_id.0 > pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    // Three requests in one write, before any answer: a produce, an
    // ApiVersions and another produce; the answers come back in that order.
    let mut wire = Vec::new();
    let asks = [
        (ApiKey::Produce, 9, produce("piped", 0, batch(-1, -1, -1, &["a".to_string()]))),
        (ApiKey::ApiVersions, 3, RequestKind::ApiVersions(ApiVersionsRequest::default())),
        (ApiKey::Produce, 9, produce("piped", 0, batch(-1, -1, -1, &["b".to_string(), "c".to_string()]))),
    ];
    for (i, (key, version, body)) in asks.iter().enumerate() {
        wire.extend_from_slice(&protocol::request::encode(*key, *version, 100 + i as i32, body).unwrap());
    }
    conn.send_raw(&wire).await;
    let mut answers = Vec::new();
    for (key, version, _) in &asks {
        let frame = conn.read_frame().await.expect("an answer");
        answers.push(protocol::response::decode(*key, *version, frame).unwrap());
    }
    assert_eq!(answers.iter().map(|(c, _)| *c).collect::<Vec<_>>(), vec![100, 101, 102]);
    assert_eq!(produced(answers.remove(0).1), (0, 0));
    assert_eq!(produced(answers.remove(1).1), (0, 1));
}

/// A produce is answered once durable, but the connection reads on while it
/// waits: an idempotent producer's pipelined batches (more of them than the
/// connection keeps in flight) are each let through in order, written in
/// order, and a fetch sent behind them sees every one; a batch that then
/// skips a sequence is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_produces_keep_their_order_and_a_request_behind_them_sees_them() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    const BATCHES: i32 = 40;
    let mut wire = Vec::new();
    for i in 0..BATCHES {
        let values = [format!("v{}", 2 * i), format!("v{}", 2 * i + 1)];
        let body = produce("piped-idem", 0, batch(4242, 0, 2 * i, &values));
        wire.extend_from_slice(&protocol::request::encode(ApiKey::Produce, 9, i, &body).unwrap());
    }
    wire.extend_from_slice(
        &protocol::request::encode(ApiKey::Fetch, 11, BATCHES, &fetch("piped-idem", 0, 0, 0, 0)).unwrap(),
    );
    conn.send_raw(&wire).await;
    for i in 0..BATCHES {
        let frame = conn.read_frame().await.expect("a produce answer");
        let (correlation, answer) = protocol::response::decode(ApiKey::Produce, 9, frame).unwrap();
        assert_eq!(correlation, i, "answers come in request order");
        assert_eq!(produced(answer), (0, 2 * i as i64), "batch {i} is written after the batches before it");
    }
    let frame = conn.read_frame().await.expect("the fetch answer");
    let (correlation, answer) = protocol::response::decode(ApiKey::Fetch, 11, frame).unwrap();
    assert_eq!(correlation, BATCHES);
    let (error, high_watermark, bytes) = fetched(answer);
    assert_eq!((error, high_watermark), (0, 2 * BATCHES as i64), "the fetch behind the produces sees all of them");
    assert!(bytes > 0);
    let skipped =
        conn.call(ApiKey::Produce, 9, produce("piped-idem", 0, batch(4242, 0, 2 * BATCHES + 5, &["x".into()]))).await;
    assert_eq!(produced(skipped).0, ResponseError::OutOfOrderSequenceNumber.code());
}

/// (error code, high watermark, record bytes) of the one partition a fetch answered.
fn fetched(answer: ResponseKind) -> (i16, i64, usize) {
    let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer: {answer:?}") };
    let p = &r.responses[0].partitions[0];
    (p.error_code, p.high_watermark, p.records.as_ref().map_or(0, |b| b.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_answers_at_once_for_min_bytes_zero_or_an_error_and_wakes_for_its_own_topic() {
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    for topic in ["mine", "other"] {
        let answer = conn.call(ApiKey::Produce, 9, produce(topic, 0, batch(-1, -1, -1, &["x".to_string()]))).await;
        assert_eq!(produced(answer).0, 0);
    }

    // At the high watermark with min_bytes 0, as Kafka: an answer at once.
    let t = Instant::now();
    let (error, hw, bytes) = fetched(conn.call(ApiKey::Fetch, 12, fetch("mine", 0, 1, 0, 3000)).await);
    assert_eq!((error, hw, bytes), (0, 1, 0));
    assert!(t.elapsed() < Duration::from_millis(1500), "min_bytes 0 waited {:?}", t.elapsed());

    // A partition that does not exist answers its error at once.
    let t = Instant::now();
    let (error, _, _) = fetched(conn.call(ApiKey::Fetch, 12, fetch("mine", 5, 0, 1, 3000)).await);
    assert_eq!(error, ResponseError::UnknownTopicOrPartition.code());
    assert!(t.elapsed() < Duration::from_millis(1500), "an error waited {:?}", t.elapsed());

    // A long poll on "mine" outlasts appends to "other", and answers the
    // append to "mine" when it lands.
    let port = node.kafka_port;
    let writer = tokio::spawn(async move {
        let mut conn = KafkaConn::connect(port).await;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            conn.call(ApiKey::Produce, 9, produce("other", 0, batch(-1, -1, -1, &["y".to_string()]))).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        conn.call(ApiKey::Produce, 9, produce("mine", 0, batch(-1, -1, -1, &["z".to_string()]))).await;
    });
    let t = Instant::now();
    let (error, hw, bytes) = fetched(conn.call(ApiKey::Fetch, 12, fetch("mine", 0, 1, 1, 10_000)).await);
    writer.await.unwrap();
    assert_eq!((error, hw), (0, 2));
    assert!(bytes > 0, "the append to the fetched topic came back empty");
    assert!(t.elapsed() >= Duration::from_millis(700), "answered before the append to its topic: {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(5), "the append to its topic did not wake it: {:?}", t.elapsed());
}

/// A fetch of partitions 0 and 1 of `topic` from offset 0 that answers at once.
fn fetch_sized(topic: &str, max_bytes: i32, partition_max_bytes: i32) -> RequestKind {
    use protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let partitions = (0..2)
        .map(|p| {
            FetchPartition::default()
                .with_partition(p)
                .with_fetch_offset(0)
                .with_partition_max_bytes(partition_max_bytes)
        })
        .collect();
    let t = FetchTopic::default()
        .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partitions(partitions);
    RequestKind::Fetch(
        protocol::messages::FetchRequest::default()
            .with_replica_id(protocol::messages::BrokerId(-1))
            .with_max_bytes(max_bytes)
            .with_topics(vec![t]),
    )
}

/// (record bytes, record count) of each partition a fetch answered.
fn fetched_sizes(answer: ResponseKind) -> Vec<(usize, usize)> {
    let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer: {answer:?}") };
    r.responses[0]
        .partitions
        .iter()
        .map(|p| {
            assert_eq!(p.error_code, 0);
            let bytes = p.records.clone().unwrap_or_default();
            (bytes.len(), protocol::records::decode_fetched(bytes).unwrap().len())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_keeps_within_max_bytes_and_partition_max_bytes_but_for_the_first_record() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[("QUEEN_KAFKA_NUM_PARTITIONS", "2")]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let values: Vec<String> = (0..10).map(|i| format!("{i}").repeat(100_000)).collect();
    // A batch of one record each: a fetch answers whole stored batches, as
    // Kafka's do, so the limits below fall between records.
    let batches: Vec<u8> = values.iter().flat_map(|v| batch(-1, -1, -1, std::slice::from_ref(v))).collect();
    for p in 0..2 {
        let request = produce("big", p, bytes::Bytes::from(batches.clone()));
        assert_eq!(produced(conn.call(ApiKey::Produce, 9, request).await).0, 0);
    }
    // Each record takes a little over 100,000 bytes. The answer's records
    // stay within max_bytes, each partition's within its own limit.
    for (max_bytes, partition_max_bytes, counts) in
        [(350_000, 250_000, [2, 1]), (250_000, 1 << 20, [2, 0]), (1 << 20, 350_000, [3, 3])]
    {
        let sizes =
            fetched_sizes(conn.call(ApiKey::Fetch, 12, fetch_sized("big", max_bytes, partition_max_bytes)).await);
        assert_eq!(
            sizes.iter().map(|s| s.1).collect::<Vec<_>>(),
            counts,
            "max {max_bytes}, per partition {partition_max_bytes}"
        );
        assert!(sizes.iter().map(|s| s.0).sum::<usize>() <= max_bytes as usize, "{sizes:?} over {max_bytes}");
        assert!(sizes.iter().all(|s| s.0 <= partition_max_bytes as usize), "{sizes:?} over {partition_max_bytes}");
    }
    // A limit below one record: the first partition with records answers its
    // first record anyway, so the consumer progresses, and no other does.
    for (max_bytes, partition_max_bytes) in [(50_000, 1 << 20), (1 << 20, 50_000), (1, 1)] {
        let sizes =
            fetched_sizes(conn.call(ApiKey::Fetch, 12, fetch_sized("big", max_bytes, partition_max_bytes)).await);
        assert_eq!(
            sizes.iter().map(|s| s.1).collect::<Vec<_>>(),
            [1, 0],
            "max {max_bytes}, per partition {partition_max_bytes}"
        );
    }
    // Record sets this large are written as chunks of their own, not copied
    // into the frame: they arrive whole and in place, with either length
    // prefix (v4's i32, v12's varint).
    for version in [4, 12] {
        let answer = conn.call(ApiKey::Fetch, version, fetch_sized("big", 1 << 20, 350_000)).await;
        let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer: {answer:?}") };
        for p in &r.responses[0].partitions {
            let records = protocol::records::decode_fetched(p.records.clone().unwrap_or_default()).unwrap();
            let got: Vec<_> = records.into_iter().map(|(offset, r)| (offset, r.value.unwrap())).collect();
            let want: Vec<_> = values[..3].iter().enumerate().map(|(i, v)| (i as i64, v.as_bytes().to_vec())).collect();
            assert_eq!(got.len(), want.len(), "v{version} partition {}", p.partition_index);
            for ((o, g), (wo, w)) in got.iter().zip(&want) {
                assert!(o == wo && g[..] == w[..], "v{version} partition {} offset {o}", p.partition_index);
            }
        }
    }
}

/// Record-batch bytes of one record per timestamp, as a producer that set
/// each record's CreateTime sends them.
fn timed_batch(timestamps: &[i64]) -> bytes::Bytes {
    use protocol::records::{encode_produced, Compression, PlainRecord, ProducedBatch};
    let records = timestamps
        .iter()
        .map(|t| PlainRecord {
            timestamp_ms: *t,
            key: None,
            value: Some(bytes::Bytes::from(t.to_string())),
            headers: vec![],
        })
        .collect();
    let batch = ProducedBatch {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        transactional: false,
        records,
        wire: bytes::Bytes::new(),
    };
    encode_produced(&batch, Compression::None).expect("encode a batch")
}

/// ListOffsets of partition 0 of `topic` for each of `timestamps`: (offset, timestamp) each.
async fn list_offsets(conn: &mut KafkaConn, topic: &str, timestamps: &[i64]) -> Vec<(i64, i64)> {
    use protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use protocol::messages::ListOffsetsRequest;
    let mut answers = Vec::new();
    for t in timestamps {
        let topic = ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![ListOffsetsPartition::default().with_partition_index(0).with_timestamp(*t)]);
        let request =
            ListOffsetsRequest::default().with_replica_id(protocol::messages::BrokerId(-1)).with_topics(vec![topic]);
        let ResponseKind::ListOffsets(r) = conn.call(ApiKey::ListOffsets, 7, RequestKind::ListOffsets(request)).await
        else {
            panic!("not a ListOffsets answer")
        };
        let p = &r.topics[0].partitions[0];
        assert_eq!(p.error_code, 0);
        answers.push((p.offset, p.timestamp));
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_by_time_answers_by_the_records_timestamps_out_of_order_across_retention_and_restarts() {
    const MAX_TIMESTAMP: i64 = -3;
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    // CreateTimes in the past and out of order, in two appends: offsets 0-2, then 3-4.
    let t0 = 1_600_000_000_000;
    for batch in [timed_batch(&[t0, t0 + 3000, t0 + 1000]), timed_batch(&[t0 + 5000, t0 + 2000])] {
        assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("times", 0, batch)).await).0, 0);
    }
    // As Kafka's time index: the first offset whose timestamp is at or after the target.
    let asked = [t0 - 1, t0 + 500, t0 + 2500, t0 + 4000, t0 + 6000, MAX_TIMESTAMP];
    let want = [(0, t0), (1, t0 + 3000), (1, t0 + 3000), (3, t0 + 5000), (-1, -1), (3, t0 + 5000)];
    assert_eq!(list_offsets(&mut conn, "times", &asked).await, want);
    // A later append with an earlier time does not move the answers before it.
    assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("times", 0, timed_batch(&[t0 + 200]))).await).0, 0);
    assert_eq!(list_offsets(&mut conn, "times", &[t0 + 100, t0 + 2500]).await, [(1, t0 + 3000), (1, t0 + 3000)]);

    // Retention removes them all (by the time they were stored); the next
    // record, older by its timestamp than any removed one, is found alone.
    let (status, _) = node
        .post("/api/v1/configure", &serde_json::json!({"queue": "times", "options": {"retentionSeconds": 1}}))
        .await;
    assert_eq!(status, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while list_offsets(&mut conn, "times", &[-2]).await[0].0 < 6 {
        assert!(std::time::Instant::now() < deadline, "retention did not move the log start");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (status, _) = node
        .post("/api/v1/configure", &serde_json::json!({"queue": "times", "options": {"retentionSeconds": 0}}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(produced(conn.call(ApiKey::Produce, 9, produce("times", 0, timed_batch(&[t0 + 10]))).await).0, 0);
    let asked = [t0 - 1, t0 + 10, t0 + 11, MAX_TIMESTAMP];
    let want = [(6, t0 + 10), (6, t0 + 10), (-1, -1), (6, t0 + 10)];
    assert_eq!(list_offsets(&mut conn, "times", &asked).await, want);

    // The index lives in memory: a restarted node builds it again from the records.
    node.kill9();
    let node = node.restart().await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    assert_eq!(list_offsets(&mut conn, "times", &asked).await, want);
}

/// What confluent-kafka (librdkafka 2.x) sent for 20 records in each
/// compression, captured by `scripts/capture-kafka-requests.py`: a Produce
/// v10 frame whose one batch holds records with a repeated header key.
fn captured_produce(codec: &str) -> protocol::messages::ProduceRequest {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("protocol/tests/captured/confluent-{codec}-0-v10.bin"));
    let mut buf = bytes::BytesMut::from(&std::fs::read(&path).unwrap()[..]);
    let frame = protocol::frame::split_frame(&mut buf, usize::MAX >> 1).unwrap().unwrap();
    match protocol::request::decode(frame).unwrap().body {
        RequestKind::Produce(p) => p,
        other => panic!("{} is not a produce: {other:?}", path.display()),
    }
}

#[tokio::test]
async fn a_batch_a_real_client_compressed_is_fetched_byte_for_byte_as_it_was_produced() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    for (codec, id) in [("gzip", 1u8), ("snappy", 2), ("lz4", 3), ("zstd", 4)] {
        let mut request = captured_produce(codec);
        request.topic_data[0].name = TopicName(StrBytes::from_string(format!("squeezed-{codec}")));
        let produced_bytes = request.topic_data[0].partition_data[0].records.clone().unwrap();
        assert_eq!(produced_bytes[22] & 7, id, "{codec}: the client compressed the batch");
        // Twice: the second batch lands at offset 20, its header rewritten.
        for base in [0, 20] {
            let answer = conn.call(ApiKey::Produce, 10, RequestKind::Produce(request.clone())).await;
            assert_eq!(produced(answer), (0, base), "{codec}");
        }
        let answer = conn.call(ApiKey::Fetch, 12, fetch(&format!("squeezed-{codec}"), 0, 25, 0, 0)).await;
        let ResponseKind::Fetch(r) = answer else { panic!("not a fetch answer: {answer:?}") };
        let fetched_bytes = r.responses[0].partitions[0].records.clone().unwrap();
        // The stored batch holding offset 25 is the second, whole: its base
        // offset is where it landed, its leader epoch 0, and every byte from
        // the magic on (CRC, compression, records) is the client's.
        assert_eq!(fetched_bytes.len(), produced_bytes.len(), "{codec}: one batch, as long as produced");
        assert_eq!(i64::from_be_bytes(fetched_bytes[..8].try_into().unwrap()), 20, "{codec}: base offset");
        assert_eq!(fetched_bytes[8..12], produced_bytes[8..12], "{codec}: batch length");
        assert_eq!(fetched_bytes[16..], produced_bytes[16..], "{codec}: the batch as it came");
        let records = protocol::records::decode_fetched(fetched_bytes).unwrap();
        assert_eq!(records.iter().map(|r| r.0).collect::<Vec<_>>(), (20..40).collect::<Vec<_>>());
        let headers: Vec<&str> = records[0].1.headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(headers, ["h", "h", "other"], "{codec}: headers are a list");
    }
}

/// Two stored batches of 48 KB each, fetched over plain TCP: the kernel
/// sends them from the qlog file to the socket (sendfile), so the node's
/// count of bytes sent that way grows by exactly their length and nothing
/// of them is read into the process; what arrives is each batch as it was
/// produced, its base offset where it landed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_stored_batch_is_sent_from_its_file_by_the_kernel_not_copied() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let (sent, read) = ("queen_kafka_fetch_sendfile_bytes_total", "queen_kafka_fetch_read_bytes_total");
    let (sent_before, read_before) = (node.counter(sent).await, node.counter(read).await);
    let (produced_bytes, fetched) = two_large_batches(&mut conn, "sent-from-files", 48).await;
    let len = produced_bytes.len();
    assert!(len > 48_000, "each batch is large: {len} bytes");
    assert_eq!(fetched.len(), 2 * len, "both batches, whole");
    for (i, fetched_batch) in fetched.chunks(len).enumerate() {
        assert_eq!(i64::from_be_bytes(fetched_batch[..8].try_into().unwrap()), 48 * i as i64, "base offset");
        assert_eq!(fetched_batch[16..], produced_bytes[16..], "batch {i} as it came");
    }
    let records = protocol::records::decode_fetched(fetched).unwrap();
    assert_eq!(records.iter().map(|r| r.0).collect::<Vec<_>>(), (0..96).collect::<Vec<_>>());
    assert_eq!(node.counter(sent).await - sent_before, 2 * len as u64, "every byte went by sendfile");
    assert_eq!(node.counter(read).await, read_before, "no stored byte was read into the node");
}
