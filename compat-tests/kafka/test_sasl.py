"""SASL on the Kafka listener (QUEEN_KAFKA_SASL_MECHANISMS): PLAIN and
SCRAM-SHA-256/512 with librdkafka (confluent-kafka and Debian's kcat, whose
librdkafka 2.0 needs SaslHandshake v0 offered) and kafka-python, the bare
token exchange of SaslHandshake v0; a wrong password and an unauthenticated
client are refused. HTTP is left open on purpose (QUEEN_HTTP_AUTH=open): the
node refuses to start with one front end protected and the other open."""

import shutil
import socket
import struct
import subprocess
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
    n = Node(
        env={
            "QUEEN_KAFKA_SASL_MECHANISMS": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "QUEEN_KAFKA_SASL_USERS": USERS,
            "QUEEN_HTTP_AUTH": "open",
        }
    )
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


KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (scripts/test installs it)")
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kcat_authenticates_as_the_docs_show(sasl_node, mechanism):
    # docs/kafka.md's example, against this node: Debian's kcat 1.7 (librdkafka
    # 2.0) uses SASL only when SaslHandshake v0 is offered, and repeats its own
    # nonce in SCRAM's final message.
    sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}"]
    creds = ["-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"]
    t = f"kcat-sasl-{uuid.uuid4().hex[:8]}"

    def kcat(*args, stdin=None):
        done = subprocess.run([KCAT, "-b", sasl_node.bootstrap, *sasl, *creds, *args], input=stdin,
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "Metadata for all topics" in kcat("-L")
    kcat("-P", "-t", t, stdin="over-sasl\n")
    assert kcat("-C", "-t", t, "-o", "beginning", "-e") == "over-sasl\n"


def frame(body):
    return struct.pack(">i", len(body)) + body


def read_frame(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (size,) = struct.unpack(">i", head)
    body = b""
    while len(body) < size:
        body += s.recv(size - len(body))
    return body


def handshake_v0(s, mechanism):
    # SaslHandshake (17) v0: header (key, version, correlation id, client id), then the mechanism.
    name = mechanism.encode()
    s.sendall(frame(struct.pack(">hhih", 17, 0, 7, -1) + struct.pack(">h", len(name)) + name))
    answer = read_frame(s)
    (correlation, error) = struct.unpack(">ih", answer[:6])
    assert (correlation, error) == (7, 0)


def test_sasl_handshake_v0_takes_bare_tokens(sasl_node):
    # After a v0 handshake the PLAIN token comes bare, in a frame of its own,
    # and the reply is a bare (empty) frame; then requests are served.
    with socket.create_connection(("127.0.0.1", sasl_node.kafka_port), timeout=10) as s:
        handshake_v0(s, "PLAIN")
        s.sendall(frame(b"\0alice\0alice-secret"))
        assert read_frame(s) == b""
        s.sendall(frame(struct.pack(">hhih", 3, 1, 9, -1) + struct.pack(">i", -1)))
        answer = read_frame(s)
        assert answer is not None and struct.unpack(">i", answer[:4])[0] == 9
    # A wrong password has nowhere to be answered but the closed connection.
    with socket.create_connection(("127.0.0.1", sasl_node.kafka_port), timeout=10) as s:
        handshake_v0(s, "PLAIN")
        s.sendall(frame(b"\0alice\0wrong"))
        assert read_frame(s) is None
