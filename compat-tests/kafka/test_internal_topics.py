"""Kafka's internal topics against confluent-kafka (librdkafka): `__consumer_offsets` and
`__transaction_state` are listed and marked internal, a produce to one is refused with
INVALID_TOPIC_EXCEPTION as Kafka refuses it, a fetch with TOPIC_AUTHORIZATION_FAILED (Queen
stores no records under them: docs/kafka.md, "Internal topics"), and a KIP-848 group's regular
expression, resolved by the coordinator, never assigns them. Before, neither topic was in
Metadata, and clients that skip internal topics by their flag could not find them."""

import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient

INTERNAL = ["__consumer_offsets", "__transaction_state"]


def test_internal_topics_are_listed_as_internal(node):
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    listed = admin.list_topics(timeout=10).topics
    assert set(INTERNAL) <= set(listed), f"internal topics missing from Metadata: {sorted(listed)}"
    described = admin.describe_topics(TopicCollection(INTERNAL))
    for name, future in described.items():
        assert future.result(timeout=10).is_internal, f"{name} is not marked internal"


def test_a_produce_to_an_internal_topic_is_refused_as_an_invalid_topic(node):
    producer = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": 10_000})
    delivered = []
    producer.produce("__consumer_offsets", b"not a commit", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(15)
    assert len(delivered) == 1 and delivered[0] is not None, f"the produce was not refused: {delivered}"
    assert delivered[0].code() == KafkaError.TOPIC_EXCEPTION, delivered[0]


def test_a_fetch_of_an_internal_topic_is_refused_and_the_node_serves_on(node):
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}"})
    consumer.assign([TopicPartition("__consumer_offsets", 0, 0)])
    error = None
    deadline = time.time() + 15
    while error is None and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error():
            error = msg.error()
    consumer.close()
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    # The refusal costs the node nothing: it still answers Metadata.
    assert AdminClient({"bootstrap.servers": node.bootstrap}).list_topics(timeout=10).brokers


def test_a_kip848_regex_is_never_resolved_to_an_internal_topic(node):
    prefix = f"rx{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": node.bootstrap})
    for topic in (f"{prefix}-a", f"{prefix}-b"):
        producer.produce(topic, b"v")
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": f"g-{prefix}",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    # The expression names an internal topic outright: the coordinator still leaves it out.
    consumer.subscribe([f"^({prefix}-.*|__consumer_offsets|__transaction_state)$"])
    seen = set()
    deadline = time.time() + 30
    while len(seen) < 2 and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen.add(msg.topic())
    assigned = {tp.topic for tp in consumer.assignment()}
    consumer.close()
    assert seen == {f"{prefix}-a", f"{prefix}-b"}, f"records read from {seen}"
    assert assigned == {f"{prefix}-a", f"{prefix}-b"}, f"assigned {assigned}"
