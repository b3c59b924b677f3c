"""Kafka's own test tools from the Kafka 4.4 jars against a real node:
VerifiableProducer seeds a topic, two TransactionalMessageCopier processes
(with --use-group-metadata and --enable-random-aborts) copy its two
partitions, one of them killed with kill -9 midway and restarted on its
transactional id, and Kafka's console consumer at read_committed then reads
every input record exactly once in the output, and nothing aborted.
scripts/test builds the classpath (compat-tests/java)."""

import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

JAVA = Path(__file__).resolve().parent.parent / "java"
RECORDS = 3000


def classpath():
    path = JAVA / "classpath.txt"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt` there")
    return path.read_text().strip()


def tool(cls, *args, **popen):
    return subprocess.Popen(["java", "-cp", classpath(), f"org.apache.kafka.tools.{cls}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def create_topics(node, names, partitions):
    a = AdminClient({"bootstrap.servers": node.bootstrap})
    for f in a.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1) for t in names]).values():
        f.result(10)


def copier(node, source, sink, partition, group, size=40):
    return tool("TransactionalMessageCopier", "--broker-list", node.bootstrap, "--input-topic", source,
                "--input-partition", str(partition), "--output-topic", sink, "--consumer-group", group,
                "--transactional-id", f"copier-{group}-{partition}", "--transaction-size", str(size),
                "--transaction-timeout", "30000", "--use-group-metadata", "--enable-random-aborts")


def finish(proc, timeout):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running after {timeout} s:\n{out[-3000:]}\n{err[-3000:]}")
    return proc.returncode, out, err


def test_transactional_message_copier_through_a_kill_copies_every_record_once(node):
    source, sink = f"tools-in-{uuid.uuid4().hex[:8]}", f"tools-out-{uuid.uuid4().hex[:8]}"
    create_topics(node, [source, sink], 2)
    # Keyed, so both partitions get records: unkeyed, the sticky
    # partitioner may put every batch in one, and the copier of the other
    # finishes at once with nothing to copy (nothing left to kill midway).
    seed = tool("VerifiableProducer", "--bootstrap-server", node.bootstrap, "--topic", source,
                "--max-messages", str(RECORDS), "--acks", "-1", "--repeating-keys", "64")
    code, out, err = finish(seed, 120)
    assert code == 0, err[-3000:]
    assert out.count('"name":"producer_send_success"') == RECORDS, out[-2000:]
    per_partition = Counter(json.loads(line)["partition"] for line in out.splitlines()
                            if '"name":"producer_send_success"' in line)
    assert min(per_partition[0], per_partition[1]) >= RECORDS // 4, per_partition

    group = f"copiers-{uuid.uuid4().hex[:8]}"
    steady = copier(node, source, sink, 0, group)
    # One record a transaction: slow enough that the kill lands midway.
    victim = copier(node, source, sink, 1, group, size=1)
    # Killed once it has committed some of its partition, not all.
    deadline = time.time() + 120
    while time.time() < deadline:
        line = victim.stdout.readline()
        if '"totalProcessed"' in line and '"totalProcessed":0,' not in line:
            break
        assert victim.poll() is None, victim.stderr.read()[-3000:]
    os.kill(victim.pid, signal.SIGKILL)
    victim.communicate()
    restarted = copier(node, source, sink, 1, group)
    for proc in (steady, restarted):
        code, out, err = finish(proc, 180)
        assert code == 0, f"{out[-2000:]}\n{err[-3000:]}"

    consumer = tool("consumer.ConsoleConsumer", "--bootstrap-server", node.bootstrap, "--topic", sink,
                    "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", "10000")
    _, out, err = finish(consumer, 120)
    values = [v for v in out.splitlines() if v.strip()]
    counts = Counter(values)
    assert set(counts) == {str(i) for i in range(RECORDS)}, f"missing {RECORDS - len(counts)}; {err[-2000:]}"
    twice = [v for v, n in counts.items() if n > 1]
    assert not twice, f"{len(twice)} records copied more than once, such as {twice[:5]}"
