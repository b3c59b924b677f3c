"""Kafka over TLS (QUEEN_KAFKA_TLS): security.protocol SSL, and SASL_SSL with
SASL on, against a CA the test makes with the openssl CLI. librdkafka
(confluent-kafka, kcat) and the Java client connect trusting the CA and fail
without it."""

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from conftest import Node

HERE = Path(__file__).resolve().parent.parent
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(name):
    """A CA and a server certificate for 127.0.0.1 it signed; answers the directory."""
    d = Path(tempfile.mkdtemp(prefix="queen-tls-"))
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
            "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", "server.key", "-out", "server.csr", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-extfile", "san.ext", "-out", "server.pem", cwd=d)
    return d


@pytest.fixture(scope="module")
def ca():
    return make_ca("Queen test CA")


@pytest.fixture(scope="module")
def stranger():
    return make_ca("Another CA")


def tls_env(ca):
    return {"QUEEN_KAFKA_TLS": "true", "QUEEN_TLS_CERT": str(ca / "server.pem"), "QUEEN_TLS_KEY": str(ca / "server.key")}


@pytest.fixture(scope="module")
def ssl_node(ca):
    n = Node(env=tls_env(ca))
    yield n
    n.stop()


@pytest.fixture(scope="module")
def sasl_ssl_node(ca):
    n = Node(env={**tls_env(ca), "QUEEN_KAFKA_SASL_MECHANISMS": "SCRAM-SHA-256", "QUEEN_KAFKA_SASL_USERS": "alice:secret", "QUEEN_HTTP_AUTH": "open"})
    yield n
    n.stop()


def round_trip(conf):
    t = f"tls-{uuid.uuid4().hex[:8]}"
    p = Producer({**conf, "acks": "all"})
    p.produce(t, b"over-tls")
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": "tls-reader"})
    c.assign([TopicPartition(t, 0, 0)])
    got, deadline = None, time.time() + 30
    while got is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got = m.value()
    c.close()
    assert got == b"over-tls"


def refused(conf):
    with pytest.raises(KafkaException):
        AdminClient(conf).list_topics(timeout=3)


def test_ssl_round_trips_trusting_the_ca_and_fails_without_it(ssl_node, ca, stranger):
    conf = {"bootstrap.servers": ssl_node.bootstrap, "security.protocol": "SSL"}
    round_trip({**conf, "ssl.ca.location": str(ca / "ca.pem")})
    refused({**conf, "ssl.ca.location": str(stranger / "ca.pem")})
    refused({"bootstrap.servers": ssl_node.bootstrap})  # plaintext


def test_sasl_ssl_round_trips(sasl_ssl_node, ca, stranger):
    conf = {
        "bootstrap.servers": sasl_ssl_node.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": "secret",
    }
    round_trip({**conf, "ssl.ca.location": str(ca / "ca.pem")})
    refused({**conf, "ssl.ca.location": str(stranger / "ca.pem")})


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (scripts/test installs it)")
def test_kcat_lists_metadata_trusting_the_ca_and_fails_without_it(ssl_node, ca, stranger):
    def kcat(ca_file):
        argv = [KCAT, "-b", ssl_node.bootstrap, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca_file}", "-L", "-m", "5"]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    ok = kcat(ca / "ca.pem")
    assert ok.returncode == 0 and "1 brokers" in ok.stdout, ok.stderr
    assert kcat(stranger / "ca.pem").returncode != 0


def test_java_client_trusting_the_ca_and_failing_without_it(ssl_node, ca, stranger):
    cwd = HERE / "java"
    if not (cwd / "classpath.txt").exists():
        pytest.fail("compat-tests/java/classpath.txt is missing: run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt` (scripts/test does it)")
    classpath = (cwd / "classpath.txt").read_text().strip()
    env = dict(os.environ, BOOTSTRAP=ssl_node.bootstrap, TRUSTED_CA=str(ca / "ca.pem"), OTHER_CA=str(stranger / "ca.pem"))
    done = subprocess.run(["java", "-cp", classpath, "TlsCheck.java"], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and "all checks passed" in done.stdout, f"{done.stdout}\n{done.stderr}"
