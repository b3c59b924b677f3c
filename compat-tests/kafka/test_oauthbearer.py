"""One authentication policy for both front ends: with JWT_ENABLED=true the
Kafka listener requires SASL OAUTHBEARER with the same tokens and roles the
HTTP API takes. kcat without credentials gets nothing; confluent-kafka with a
token produces and consumes; a read-only token cannot produce or join a group;
deleting a topic takes an admin token; a produced record carries the token's
sub as producerSub."""

import shutil
import subprocess
import time
import uuid

import httpx
import jwt
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import Node

SECRET = "kafka-oauth-secret"
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def token(role, sub="kafka-tester", exp_in=300, secret=SECRET):
    return jwt.encode({"sub": sub, "role": role, "exp": int(time.time()) + exp_in}, secret, algorithm="HS256")


@pytest.fixture(scope="module")
def jwt_node():
    n = Node(env={"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256", "JWT_SECRET": SECRET})
    yield n
    n.stop()


def conf(node, bearer):
    """confluent-kafka settings that authenticate with `bearer` through oauth_cb."""
    return {
        "bootstrap.servers": node.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": lambda _config: (bearer, time.time() + 300),
    }


def http(node, role="admin"):
    return httpx.Client(base_url=node.url, headers={"Authorization": f"Bearer {token(role)}"}, timeout=10)


def create_topic(node, name):
    """Creates a one-partition topic; creating topics takes read-write, as configuring a queue does."""
    admin = AdminClient(conf(node, token("read-write")))
    admin.create_topics([NewTopic(name, 1)])[name].result(15)


def produce_one(node, bearer, topic, value):
    """Produces one record and answers the delivery error, None on success."""
    outcome = []
    p = Producer({**conf(node, bearer), "message.timeout.ms": 10000})
    p.produce(topic, value, on_delivery=lambda err, _msg: outcome.append(err))
    p.flush(15)
    assert outcome, "no delivery report"
    return outcome[0]


def test_the_boot_log_states_each_listeners_authentication(jwt_node):
    log = jwt_node.log_since(0)
    assert "HTTP listener authentication: JWT bearer tokens" in log, log
    assert "Kafka listener authentication: SASL OAUTHBEARER, required" in log, log


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (scripts/test installs it)")
def test_kcat_without_credentials_gets_nothing(jwt_node):
    t = f"no-cred-{uuid.uuid4().hex[:8]}"
    create_topic(jwt_node, t)
    with http(jwt_node) as h:
        r = h.post("/api/v1/push", json={"items": [{"queue": t, "partition": "0", "payload": "kept"}]})
        assert r.status_code == 201, r.text

    def kcat(*args, stdin=None):
        return subprocess.run(
            [KCAT, "-b", jwt_node.bootstrap, "-m", "3", *args],
            input=stdin, capture_output=True, text=True, timeout=30,
        )

    listing = kcat("-L")
    assert listing.returncode != 0 and "Metadata for" not in listing.stdout, listing.stdout
    produced = kcat("-P", "-t", t, "-X", "message.timeout.ms=3000", stdin="intruder\n")
    assert produced.returncode != 0, produced.stderr
    consumed = kcat("-C", "-t", t, "-o", "beginning", "-e", "-X", "topic.metadata.refresh.interval.ms=1000")
    assert consumed.returncode != 0 and "kept" not in consumed.stdout, consumed.stdout
    with http(jwt_node) as h:
        r = h.post("/api/v1/fetch", json={"entries": [{"queue": t, "partition": "0", "offset": 0}]})
        assert "intruder" not in r.text, "an unauthenticated produce was stored"


def test_a_token_produces_and_consumes_and_its_sub_is_the_producer(jwt_node):
    t = f"oauth-{uuid.uuid4().hex[:8]}"
    writer = token("read-write", sub="kafka-alice")
    assert produce_one(jwt_node, writer, t, b"over-oauthbearer") is None
    c = Consumer({**conf(jwt_node, writer), "group.id": f"g-{t}", "auto.offset.reset": "earliest"})
    c.subscribe([t])
    got = None
    deadline = time.time() + 30
    while got is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got = m.value()
    c.close()
    assert got == b"over-oauthbearer"
    with http(jwt_node, "read-write") as h:
        r = h.get(f"/api/v1/pop/queue/{t}", params={"batch": 5, "wait": "false"})
        assert r.status_code == 200, r.text
        assert [m["producerSub"] for m in r.json()["messages"]] == ["kafka-alice"]


def test_a_read_only_token_reads_but_cannot_produce_or_join_a_group(jwt_node):
    t = f"ro-{uuid.uuid4().hex[:8]}"
    create_topic(jwt_node, t)
    assert produce_one(jwt_node, token("read-write"), t, b"written") is None
    reader = token("read-only")
    err = produce_one(jwt_node, reader, t, b"refused")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    # Reading without a group is what HTTP's read-only fetch allows.
    c = Consumer({**conf(jwt_node, reader), "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(t, 0, 0)])
    got = None
    deadline = time.time() + 20
    while got is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got = m.value()
    c.close()
    assert got == b"written"
    # Joining a group is consuming, as a pop is: read-write and up.
    errors = []
    c = Consumer({**conf(jwt_node, reader), "group.id": f"ro-group-{t}", "error_cb": errors.append})
    c.subscribe([t])
    deadline = time.time() + 20
    seen = None
    while seen is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() and m.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
            seen = m.error()
        seen = seen or next((e for e in errors if e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED), None)
    c.close()
    assert seen is not None, [str(e) for e in errors]


def test_deleting_a_topic_takes_an_admin_token(jwt_node):
    t = f"del-{uuid.uuid4().hex[:8]}"
    create_topic(jwt_node, t)
    writer = AdminClient(conf(jwt_node, token("read-write")))
    with pytest.raises(KafkaException) as e:
        writer.delete_topics([t], operation_timeout=10)[t].result(15)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    reader = AdminClient(conf(jwt_node, token("read-only")))
    with pytest.raises(KafkaException) as e:
        reader.create_topics([NewTopic(f"{t}-new", 1)])[f"{t}-new"].result(15)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin = AdminClient(conf(jwt_node, token("admin")))
    admin.delete_topics([t], operation_timeout=10)[t].result(15)
    assert t not in admin.list_topics(timeout=10).topics


@pytest.mark.parametrize(
    "bad",
    [token("admin", secret="not-the-secret"), token("admin", exp_in=-120), jwt.encode({"sub": "x", "exp": int(time.time()) + 300}, SECRET, algorithm="HS256")],
    ids=["forged", "expired", "no-role"],
)
def test_a_token_that_does_not_verify_is_refused(jwt_node, bad):
    errors = []
    a = AdminClient({**conf(jwt_node, bad), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        a.list_topics(timeout=3)
    a.poll(1)
    assert any("SASL authentication error" in e.str() for e in errors), [e.str() for e in errors]


def test_kafka_open_on_purpose_beside_jwt():
    """QUEEN_KAFKA_AUTH=open: HTTP takes tokens, Kafka is open, and the log says so."""
    n = Node(env={"JWT_ENABLED": "true", "JWT_SECRET": SECRET, "QUEEN_KAFKA_AUTH": "open"})
    try:
        assert "Kafka listener authentication: none, open on purpose (QUEEN_KAFKA_AUTH=open)" in n.log_since(0)
        meta = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(timeout=10)
        assert meta.brokers
    finally:
        n.stop()
