//! Kafka's administrative answers at the byte level: CreateTopics with
//! replica assignments and settings, AlterConfigs to the value in force, a
//! refused produce that creates no topic, commit metadata that OffsetFetch
//! returns across a restart, and a static member's return.

mod common;

use common::kafka::{batch, KafkaConn};
use common::Node;
use protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig};
use protocol::messages::describe_configs_request::DescribeConfigsResource;
use protocol::messages::incremental_alter_configs_request as incremental;
use protocol::messages::join_group_request::JoinGroupRequestProtocol;
use protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use protocol::messages::{
    AlterConfigsRequest, ApiKey, BrokerId, CreateTopicsRequest, DescribeConfigsRequest, GroupId, HeartbeatRequest,
    IncrementalAlterConfigsRequest, JoinGroupRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    ProduceRequest, RequestKind, ResponseKind, SyncGroupRequest, TopicName,
};
use protocol::{ResponseError, StrBytes};

const TOPIC: i8 = 2;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn topic_name(name: &str) -> TopicName {
    TopicName(s(name))
}

/// Creates one topic as asked; answers (error code, partitions answered).
async fn create(conn: &mut KafkaConn, topic: CreatableTopic, validate_only: bool) -> (i16, i32) {
    let req = CreateTopicsRequest::default().with_topics(vec![topic]).with_validate_only(validate_only);
    let ResponseKind::CreateTopics(r) = conn.call(ApiKey::CreateTopics, 5, RequestKind::CreateTopics(req)).await else {
        panic!("not a CreateTopics answer")
    };
    (r.topics[0].error_code, r.topics[0].num_partitions)
}

/// Every topic Metadata lists but Kafka's internal ones, with its partition count.
async fn listed(conn: &mut KafkaConn) -> Vec<(String, usize)> {
    let ResponseKind::Metadata(r) =
        conn.call(ApiKey::Metadata, 9, RequestKind::Metadata(MetadataRequest::default().with_topics(None))).await
    else {
        panic!("not a Metadata answer")
    };
    r.topics
        .iter()
        .filter(|t| !t.is_internal)
        .map(|t| (t.name.as_ref().unwrap().0.to_string(), t.partitions.len()))
        .collect()
}

fn produce(topic: &str, records: bytes::Bytes) -> RequestKind {
    let data = PartitionProduceData::default().with_index(0).with_records(Some(records));
    let topic = TopicProduceData::default().with_name(topic_name(topic)).with_partition_data(vec![data]);
    RequestKind::Produce(ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_topic_data(vec![topic]))
}

async fn produce_error(conn: &mut KafkaConn, topic: &str, records: bytes::Bytes) -> i16 {
    let ResponseKind::Produce(r) = conn.call(ApiKey::Produce, 9, produce(topic, records)).await else {
        panic!("not a Produce answer")
    };
    r.responses[0].partition_responses[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_answers_assignments_and_settings_as_kafka_does() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;

    // Partition count -1 and one assignment per partition: three partitions.
    let assignment =
        |p: i32| CreatableReplicaAssignment::default().with_partition_index(p).with_broker_ids(vec![BrokerId(1)]);
    let assigned = CreatableTopic::default()
        .with_name(topic_name("assigned"))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
        .with_assignments((0..3).map(assignment).collect());
    assert_eq!(create(&mut conn, assigned, false).await, (0, 3));
    // An assignment to a broker this cluster does not have is refused.
    let elsewhere = CreatableTopic::default()
        .with_name(topic_name("elsewhere"))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
        .with_assignments(vec![assignment(0).with_broker_ids(vec![BrokerId(7)])]);
    assert_eq!(create(&mut conn, elsewhere, false).await.0, ResponseError::InvalidReplicaAssignment.code());

    // A setting Kafka does not know: INVALID_CONFIG, validating or not, and no topic.
    let setting =
        |name: &str, value: &str| CreatableTopicConfig::default().with_name(s(name)).with_value(Some(s(value)));
    let unknown = CreatableTopic::default()
        .with_name(topic_name("unknown-setting"))
        .with_num_partitions(1)
        .with_replication_factor(1)
        .with_configs(vec![setting("retention.ms", "60000"), setting("no.such.setting", "1")]);
    for validate_only in [true, false] {
        let (code, _) = create(&mut conn, unknown.clone(), validate_only).await;
        assert_eq!(code, ResponseError::InvalidConfig.code(), "validate_only {validate_only}");
    }
    // Kafka's own settings are accepted.
    let known = unknown.clone().with_name(topic_name("known-settings")).with_configs(vec![
        setting("retention.ms", "60000"),
        setting("cleanup.policy", "delete"),
        setting("segment.ms", "3600000"),
    ]);
    assert_eq!(create(&mut conn, known, false).await, (0, 1));

    let topics = listed(&mut conn).await;
    assert!(topics.contains(&("assigned".to_string(), 3)), "{topics:?}");
    assert!(topics.iter().all(|(t, _)| t != "unknown-setting" && t != "elsewhere"), "{topics:?}");
    // The created topic's retention is the one asked for.
    let resource = DescribeConfigsResource::default()
        .with_resource_type(TOPIC)
        .with_resource_name(s("known-settings"))
        .with_configuration_keys(None);
    let req = DescribeConfigsRequest::default().with_resources(vec![resource]);
    let ResponseKind::DescribeConfigs(r) =
        conn.call(ApiKey::DescribeConfigs, 1, RequestKind::DescribeConfigs(req)).await
    else {
        panic!("not a DescribeConfigs answer")
    };
    let retention = r.results[0].configs.iter().find(|c| c.name.as_str() == "retention.ms").unwrap();
    assert_eq!(retention.value.as_deref(), Some("60000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_configs_accepts_a_value_already_in_force_and_refuses_a_change() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let topic = CreatableTopic::default().with_name(topic_name("t")).with_num_partitions(1).with_replication_factor(1);
    assert_eq!(create(&mut conn, topic, false).await.0, 0);

    for (name, value, expected) in [
        ("cleanup.policy", "delete", 0),
        ("cleanup.policy", "compact", ResponseError::InvalidConfig.code()),
        ("no.such.setting", "1", ResponseError::InvalidConfig.code()),
        ("retention.ms", "120000", 0),
        ("max.message.bytes", "-5", ResponseError::InvalidConfig.code()),
        ("max.message.bytes", "2000", 0),
    ] {
        let config = AlterableConfig::default().with_name(s(name)).with_value(Some(s(value)));
        let resource = AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(s("t"))
            .with_configs(vec![config]);
        let req = AlterConfigsRequest::default().with_resources(vec![resource]);
        let ResponseKind::AlterConfigs(r) = conn.call(ApiKey::AlterConfigs, 1, RequestKind::AlterConfigs(req)).await
        else {
            panic!("not an AlterConfigs answer")
        };
        assert_eq!(r.responses[0].error_code, expected, "AlterConfigs {name}={value}");

        let config = incremental::AlterableConfig::default().with_name(s(name)).with_value(Some(s(value)));
        let resource = incremental::AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(s("t"))
            .with_configs(vec![config]);
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
        let ResponseKind::IncrementalAlterConfigs(r) =
            conn.call(ApiKey::IncrementalAlterConfigs, 1, RequestKind::IncrementalAlterConfigs(req)).await
        else {
            panic!("not an IncrementalAlterConfigs answer")
        };
        assert_eq!(r.responses[0].error_code, expected, "IncrementalAlterConfigs {name}={value}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_produce_creates_no_topic() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[("QUEEN_KAFKA_MESSAGE_MAX_BYTES", "1000")]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;

    let too_large = batch(-1, -1, -1, &["x".repeat(5000)]);
    assert_eq!(produce_error(&mut conn, "too-large", too_large).await, ResponseError::MessageTooLarge.code());
    let garbage = bytes::Bytes::from_static(b"not a record batch at all, only bytes");
    assert_eq!(produce_error(&mut conn, "garbage", garbage).await, ResponseError::CorruptMessage.code());
    let topics = listed(&mut conn).await;
    assert!(topics.is_empty(), "a refused produce created {topics:?}");

    // A produce that is written creates its topic, as before.
    assert_eq!(produce_error(&mut conn, "written", batch(-1, -1, -1, &["ok".to_string()])).await, 0);
    assert_eq!(listed(&mut conn).await.into_iter().map(|(t, _)| t).collect::<Vec<_>>(), ["written"]);
}

/// Commits `offset` with `metadata` for group "g" on partition 0 of `topic`
/// (outside group management); answers the partition's error code.
async fn commit(conn: &mut KafkaConn, topic: &str, offset: i64, metadata: &str) -> i16 {
    let partition = OffsetCommitRequestPartition::default()
        .with_partition_index(0)
        .with_committed_offset(offset)
        .with_committed_metadata(Some(s(metadata)));
    let topic = OffsetCommitRequestTopic::default().with_name(topic_name(topic)).with_partitions(vec![partition]);
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![topic]);
    let ResponseKind::OffsetCommit(r) = conn.call(ApiKey::OffsetCommit, 8, RequestKind::OffsetCommit(req)).await else {
        panic!("not an OffsetCommit answer")
    };
    r.topics[0].partitions[0].error_code
}

/// Group "g"'s (offset, metadata) on partition 0 of `topic`.
async fn fetch_committed(conn: &mut KafkaConn, topic: &str) -> (i64, String) {
    let asked = OffsetFetchRequestTopic::default().with_name(topic_name(topic)).with_partition_indexes(vec![0]);
    let req = OffsetFetchRequest::default().with_group_id(GroupId(s("g"))).with_topics(Some(vec![asked]));
    let ResponseKind::OffsetFetch(r) = conn.call(ApiKey::OffsetFetch, 7, RequestKind::OffsetFetch(req)).await else {
        panic!("not an OffsetFetch answer")
    };
    let p = &r.topics[0].partitions[0];
    (p.committed_offset, p.metadata.as_deref().unwrap_or_default().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_fetch_returns_the_commit_metadata_across_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::start(&tmp.path().join("data"), &[]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let values: Vec<String> = (0..5).map(|i| format!("v{i}")).collect();
    for topic in ["a", "b"] {
        assert_eq!(produce_error(&mut conn, topic, batch(-1, -1, -1, &values)).await, 0);
    }
    assert_eq!(commit(&mut conn, "a", 2, "checkpoint-a").await, 0);
    assert_eq!(fetch_committed(&mut conn, "a").await, (2, "checkpoint-a".to_string()));
    // A new metadata at the same offset replaces the old one.
    assert_eq!(commit(&mut conn, "a", 2, "checkpoint-a2").await, 0);
    assert_eq!(fetch_committed(&mut conn, "a").await, (2, "checkpoint-a2".to_string()));
    // Over Kafka's 4096 bytes: refused, and the commit before it stands.
    let code = commit(&mut conn, "a", 4, &"m".repeat(4097)).await;
    assert_eq!(code, ResponseError::OffsetMetadataTooLarge.code());
    assert_eq!(fetch_committed(&mut conn, "a").await, (2, "checkpoint-a2".to_string()));

    // Through a graceful stop (the checkpoint) and a kill -9 (the qlog).
    node.terminate();
    let mut node = node.restart().await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    assert_eq!(fetch_committed(&mut conn, "a").await, (2, "checkpoint-a2".to_string()));
    assert_eq!(commit(&mut conn, "b", 3, "{\"epoch\":7}").await, 0);
    node.kill9();
    let node = node.restart().await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    assert_eq!(fetch_committed(&mut conn, "a").await, (2, "checkpoint-a2".to_string()));
    assert_eq!(fetch_committed(&mut conn, "b").await, (3, "{\"epoch\":7}".to_string()));
}

/// JoinGroup v5 of static member "i1" to group "static"; answers (error,
/// generation, leader, member id).
async fn join_static(conn: &mut KafkaConn, member_id: &str) -> (i16, i32, String, String) {
    let protocol =
        JoinGroupRequestProtocol::default().with_name(s("range")).with_metadata(bytes::Bytes::from_static(b"m"));
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s("static")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(s(member_id))
        .with_group_instance_id(Some(s("i1")))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![protocol]);
    let ResponseKind::JoinGroup(r) = conn.call(ApiKey::JoinGroup, 5, RequestKind::JoinGroup(req)).await else {
        panic!("not a JoinGroup answer")
    };
    (r.error_code, r.generation_id, r.leader.to_string(), r.member_id.to_string())
}

/// SyncGroup v3 as static member "i1"; answers (error, assignment).
async fn sync_static(conn: &mut KafkaConn, member_id: &str, generation: i32, assign: bool) -> (i16, bytes::Bytes) {
    let assignments = match assign {
        true => vec![SyncGroupRequestAssignment::default()
            .with_member_id(s(member_id))
            .with_assignment(bytes::Bytes::from_static(b"partitions 0-3"))],
        false => vec![],
    };
    let req = SyncGroupRequest::default()
        .with_group_id(GroupId(s("static")))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
        .with_group_instance_id(Some(s("i1")))
        .with_assignments(assignments);
    let ResponseKind::SyncGroup(r) = conn.call(ApiKey::SyncGroup, 3, RequestKind::SyncGroup(req)).await else {
        panic!("not a SyncGroup answer")
    };
    (r.error_code, r.assignment)
}

async fn heartbeat_static(conn: &mut KafkaConn, member_id: &str, generation: i32) -> i16 {
    let req = HeartbeatRequest::default()
        .with_group_id(GroupId(s("static")))
        .with_generation_id(generation)
        .with_member_id(s(member_id))
        .with_group_instance_id(Some(s("i1")));
    let ResponseKind::Heartbeat(r) = conn.call(ApiKey::Heartbeat, 3, RequestKind::Heartbeat(req)).await else {
        panic!("not a Heartbeat answer")
    };
    r.error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_static_member_keeps_generation_and_assignment_and_fences_its_old_id() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[("QUEEN_KAFKA_INITIAL_REBALANCE_DELAY_MS", "0")]).await;
    let mut conn = KafkaConn::connect(node.kafka_port).await;

    // A static member needs no second join for its id (KIP-345).
    let (code, generation, leader, old_id) = join_static(&mut conn, "").await;
    assert_eq!((code, leader.as_str()), (0, old_id.as_str()));
    assert_eq!(sync_static(&mut conn, &old_id, generation, true).await.0, 0);

    // The same instance starts again: a new id at once, the same generation,
    // the leader named as before (so it does not assign again), its assignment.
    let (code, again, leader, new_id) = join_static(&mut conn, "").await;
    assert_eq!((code, again, leader.as_str()), (0, generation, old_id.as_str()));
    assert_ne!(new_id, old_id);
    let (code, assignment) = sync_static(&mut conn, &new_id, generation, false).await;
    assert_eq!((code, &assignment[..]), (0, &b"partitions 0-3"[..]));
    assert_eq!(heartbeat_static(&mut conn, &new_id, generation).await, 0);

    // The old id is fenced wherever it shows up.
    let fenced = ResponseError::FencedInstanceId.code();
    assert_eq!(heartbeat_static(&mut conn, &old_id, generation).await, fenced);
    assert_eq!(sync_static(&mut conn, &old_id, generation, false).await.0, fenced);
    assert_eq!(join_static(&mut conn, &old_id).await.0, fenced);
}

/// One naming rule for both front ends (docs/kafka.md, Names): HTTP refuses
/// names no client could address (a control character, a '/'), and Kafka
/// lists only the queues whose names are Kafka topic names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_kafka_cannot_address_stay_off_kafka_and_unaddressable_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let node = Node::start(&tmp.path().join("data"), &[]).await;
    for (queue, partition) in
        [("nul\0queue", "p"), ("line\nbreak", "p"), ("a/b", "p"), ("fine", "x\ny"), ("fine", "p/q")]
    {
        let body = serde_json::json!({"items": [{"queue": queue, "partition": partition, "payload": {"n": 1}}]});
        let (status, answer) = node.post("/api/v1/push", &body).await;
        assert_eq!(status, 400, "queue {queue:?} partition {partition:?}: {answer}");
        assert!(answer["error"].as_str().unwrap_or_default().contains("control character"), "{answer}");
    }
    let (status, answer) =
        node.post("/api/v1/configure", &serde_json::json!({"queue": "tab\there", "options": {}})).await;
    assert_eq!(status, 400, "{answer}");

    // An HTTP-only name (a space, a ':') is served over HTTP and not listed to Kafka.
    for queue in ["http only", "orders:eu", "kafka.topic_ok-1"] {
        let body = serde_json::json!({"items": [{"queue": queue, "payload": {"n": 1}}]});
        assert_eq!(node.post("/api/v1/push", &body).await.0, 201, "{queue}");
    }
    let mut conn = KafkaConn::connect(node.kafka_port).await;
    let names: Vec<String> = listed(&mut conn).await.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["kafka.topic_ok-1"]);
    // Naming it directly over Kafka is refused as an invalid topic, and creates nothing.
    let ResponseKind::Produce(r) =
        conn.call(ApiKey::Produce, 9, produce("http only", batch(-1, -1, -1, &["v".into()]))).await
    else {
        panic!("not a Produce answer")
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, ResponseError::InvalidTopicException.code());
}
