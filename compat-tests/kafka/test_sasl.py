"""SASL on the Kafka listener (QUEEN_KAFKA_SASL_MECHANISMS): PLAIN and
SCRAM-SHA-256/512 with librdkafka and kafka-python; a wrong password and an
unauthenticated client are refused."""

import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from conftest import Node
from kafka import KafkaProducer

USERS = "alice:alice-secret,bob:bob-secret"


@pytest.fixture(scope="module")
def sasl_node():
    n = Node(env={"QUEEN_KAFKA_SASL_MECHANISMS": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "QUEEN_KAFKA_SASL_USERS": USERS})
    yield n
    n.stop()


def conf(node, mechanism, user="alice", password="alice-secret"):
    return {
        "bootstrap.servers": node.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_librdkafka_authenticates_and_round_trips(sasl_node, mechanism):
    t = f"sasl-{uuid.uuid4().hex[:8]}"
    p = Producer({**conf(sasl_node, mechanism), "acks": "all"})
    p.produce(t, b"secret-payload")
    assert p.flush(30) == 0
    c = Consumer({**conf(sasl_node, mechanism, "bob", "bob-secret"), "group.id": "sasl-reader"})
    c.assign([TopicPartition(t, 0, 0)])
    got = None
    deadline = time.time() + 30
    while got is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got = m.value()
    c.close()
    assert got == b"secret-payload"


def test_wrong_password_is_refused(sasl_node):
    errors = []
    a = AdminClient({**conf(sasl_node, "SCRAM-SHA-256", password="wrong"), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        a.list_topics(timeout=3)
    a.poll(1)  # errors reach error_cb from poll
    assert any("authentication failed" in e.str() for e in errors), [e.str() for e in errors]


def test_kafka_python_scram(sasl_node):
    p = KafkaProducer(
        bootstrap_servers=sasl_node.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="bob",
        sasl_plain_password="bob-secret",
    )
    meta = p.send(f"sasl-kpy-{uuid.uuid4().hex[:6]}", b"v").get(timeout=30)
    assert meta.offset == 0
    p.close()


def test_an_unauthenticated_client_gets_nothing(sasl_node):
    # Metadata v1 for every topic, before any SASL exchange: the node closes the connection.
    body = struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", -1)
    with socket.create_connection(("127.0.0.1", sasl_node.kafka_port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        assert s.recv(4096) == b""
