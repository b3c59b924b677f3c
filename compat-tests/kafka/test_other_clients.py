"""The Kafka clients of other languages against a real node, each through a
small program of the suite's own that exits non-zero on a failed check:
kafkajs (compat-tests/kafkajs), the Java client (compat-tests/java: its
producer, consumer group and admin, its transactions, and its consumer
with the consumer group protocol of KIP-848) and
franz-go with kadm (compat-tests/franz-go). scripts/test installs them."""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent


def run(node, argv, cwd, timeout=240):
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=dict(os.environ, BOOTSTRAP=node.bootstrap),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{argv[0]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def needs(path, how):
    if not path.exists():
        pytest.fail(f"{path} is missing: {how} (scripts/test does it)")


def test_kafkajs(node):
    cwd = HERE / "kafkajs"
    needs(cwd / "node_modules" / "kafkajs", "run `npm ci` in compat-tests/kafkajs")
    assert "all checks passed" in run(node, ["node", "suite.js"], cwd)


def test_java_kafka_clients(node):
    cwd = HERE / "java"
    needs(cwd / "classpath.txt", "run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt`")
    classpath = (cwd / "classpath.txt").read_text().strip()
    assert "all checks passed" in run(node, ["java", "-cp", classpath, "Suite.java"], cwd)


def test_java_kafka_client_transactions(node):
    cwd = HERE / "java"
    needs(cwd / "classpath.txt", "run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt`")
    classpath = (cwd / "classpath.txt").read_text().strip()
    assert "all checks passed" in run(node, ["java", "-cp", classpath, "Transactions.java"], cwd)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_java_consumer_group_protocol(node, assignor):
    """group.protocol=consumer (KIP-848): a group of three grows to four and
    shrinks to two under load, every record consumed once, offsets
    committed to the end, no partition owned by two members at once."""
    cwd = HERE / "java"
    needs(cwd / "classpath.txt", "run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt`")
    classpath = (cwd / "classpath.txt").read_text().strip()
    done = subprocess.run(
        ["java", "-cp", classpath, "ConsumerProtocol.java"],
        cwd=cwd,
        env=dict(os.environ, BOOTSTRAP=node.bootstrap, GROUP_PROTOCOL_ASSIGNOR=assignor),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"java failed:\n{done.stdout}\n{done.stderr}"
    assert "all checks passed" in done.stdout


def test_franz_go(node):
    cwd = HERE / "franz-go"
    needs(cwd / "franz-suite", "run `go build -o franz-suite .`")
    assert "all checks passed" in run(node, ["./franz-suite"], cwd)
