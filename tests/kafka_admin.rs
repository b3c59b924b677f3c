//! Kafka's administrative answers at the byte level: CreateTopics with
//! replica assignments and settings, AlterConfigs to the value in force, a
//! refused produce that creates no topic, and commit metadata that
//! OffsetFetch returns across a restart.

mod common;

use common::kafka::{batch, KafkaConn};
use common::Node;
use protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig};
use protocol::messages::describe_configs_request::DescribeConfigsResource;
use protocol::messages::incremental_alter_configs_request as incremental;
use protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use protocol::messages::{
    AlterConfigsRequest, ApiKey, BrokerId, CreateTopicsRequest, DescribeConfigsRequest, GroupId,
    IncrementalAlterConfigsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, ProduceRequest,
    RequestKind, ResponseKind, TopicName,
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

/// Every topic Metadata lists, with its partition count.
async fn listed(conn: &mut KafkaConn) -> Vec<(String, usize)> {
    let ResponseKind::Metadata(r) =
        conn.call(ApiKey::Metadata, 9, RequestKind::Metadata(MetadataRequest::default().with_topics(None))).await
    else {
        panic!("not a Metadata answer")
    };
    r.topics.iter().map(|t| (t.name.as_ref().unwrap().0.to_string(), t.partitions.len())).collect()
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
    let node = Node::start(&tmp.path().join("data"), &[("QUEEN_MAX_PAYLOAD_BYTES", "1000")]).await;
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
