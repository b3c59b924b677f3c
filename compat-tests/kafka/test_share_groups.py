"""Share groups (KIP-932) against a real node, with Kafka 4.4's own share
consumer (compat-tests/java/ShareGroups.java) and tools: consumers of one
group divide a partition's records one by one; a record released comes
again, a rejected one and one past the delivery count limit land in
Queen's dead-letter queue with their payload; a consumer killed holding
records gives them back at once, uncounted; the console share consumer
and kafka-share-groups work; and an HTTP consumer of the same group takes
its share of the same records."""

import json
import os
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

HERE = Path(__file__).resolve().parent.parent / "java"


def classpath():
    path = HERE / "classpath.txt"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt`")
    return path.read_text().strip()


def java(node, *args, timeout=240, main="ShareGroups.java"):
    done = subprocess.run(
        ["java", "-cp", classpath(), main, *args],
        cwd=HERE,
        env=dict(os.environ, BOOTSTRAP=node.bootstrap),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{main} {args} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout


def produce(node, topic, values):
    p = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    for v in values:
        p.produce(topic, value=v.encode(), partition=0)
    assert p.flush(30) == 0


def get(node, path, **query):
    with urllib.request.urlopen(f"{node.url}{path}?{urllib.parse.urlencode(query)}", timeout=10) as r:
        return json.load(r) if r.status == 200 else None


def post(node, path, body):
    req = urllib.request.Request(
        node.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def drained(out):
    """(offset, delivery count, value) of each record a `drain` printed."""
    got = []
    for line in out.splitlines():
        if line.startswith("got "):
            _, offset, count, value = line.split(" ", 3)
            got.append((int(offset), int(count), value))
    return got


def test_share_consumers_divide_a_partition_and_dead_letter_what_they_reject(node):
    out = java(node)
    assert "all checks passed" in out
    topic = next(line.split()[1] for line in out.splitlines() if line.startswith("topic "))
    group = next(line.split()[1] for line in out.splitlines() if line.startswith("group "))
    dlq = get(node, "/api/v1/dlq", queue=topic, consumerGroup=group)
    letters = {m["data"]: m for m in dlq["messages"]}
    assert set(letters) == {"reject-me", "poison"}, dlq
    assert "rejected" in letters["reject-me"]["errorMessage"]
    assert "delivery count limit 3" in letters["poison"]["errorMessage"]
    assert letters["poison"]["retryCount"] == 3


def test_a_share_consumer_killed_holding_records_gives_them_back_at_once_uncounted(node):
    """Its connection drops, and with it its share session: as Kafka does,
    the records it held are available again at once, long before their
    locks (a minute) run out, and at the delivery count they had, Kafka
    lowering again what their acquisition raised."""
    topic, group = f"share-kill-{uuid.uuid4().hex[:8]}", f"share-kill-{uuid.uuid4().hex[:8]}"
    lock_ms = 60_000
    assert "configured" in java(
        node, "configure", group, "share.auto.offset.reset=earliest", f"share.record.lock.duration.ms={lock_ms}"
    )
    produce(node, topic, [f"k{i}" for i in range(20)])
    holder = subprocess.Popen(
        ["java", "-cp", classpath(), "ShareGroups.java", "hold", topic, group],
        cwd=HERE,
        env=dict(os.environ, BOOTSTRAP=node.bootstrap),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = holder.stdout.readline()
        assert line.startswith("held "), line
        held = {int(o) for o in line.split()[1].split(",")}
    finally:
        holder.kill()
        holder.wait()
    killed = time.time()
    got = drained(java(node, "drain", topic, group, "40", "4"))
    assert held and sorted(o for o, _, _ in got) == list(range(20)), (held, got)
    # Every record comes once, as its first delivery: the held ones too.
    assert all(n == 1 for _, n, _ in got), got
    assert time.time() - killed < lock_ms / 1000


def test_the_console_share_consumer_reads_and_kafka_share_groups_describes(node):
    topic, group = f"share-console-{uuid.uuid4().hex[:8]}", f"share-console-{uuid.uuid4().hex[:8]}"
    java(node, "configure", group, "share.auto.offset.reset=earliest")
    produce(node, topic, ["c1", "c2", "c3"])
    cp = classpath()
    tool = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
    read = subprocess.run(
        ["java", "-cp", cp, tool, "--bootstrap-server", node.bootstrap, "--topic", topic, "--group", group,
         "--max-messages", "3", "--timeout-ms", "30000"],
        capture_output=True, text=True, timeout=120,
    )
    assert read.stdout.split() == ["c1", "c2", "c3"], (read.stdout, read.stderr[-2000:])
    describe = subprocess.run(
        ["java", "-cp", cp, "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
         "--bootstrap-server", node.bootstrap, "--describe", "--group", group],
        capture_output=True, text=True, timeout=120,
    )
    rows = [line.split() for line in describe.stdout.splitlines() if line.startswith(group)]
    # GROUP TOPIC PARTITION START-OFFSET LAG: every record read, so it starts at 3.
    assert rows and rows[0][:4] == [group, topic, "0", "3"], (describe.stdout, describe.stderr[-2000:])
    def share_groups(*args):
        done = subprocess.run(
            ["java", "-cp", cp, "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
             "--bootstrap-server", node.bootstrap, *args],
            capture_output=True, text=True, timeout=120,
        )
        return done.stdout + done.stderr[-2000:]

    assert group in share_groups("--list").split()
    # Back to the start (AlterShareGroupOffsets), and read again from there.
    reset = share_groups("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert [group, topic, "0", "0"] in [line.split() for line in reset.splitlines()], reset
    again = subprocess.run(
        ["java", "-cp", cp, tool, "--bootstrap-server", node.bootstrap, "--topic", topic, "--group", group,
         "--max-messages", "3", "--timeout-ms", "30000"],
        capture_output=True, text=True, timeout=120,
    )
    assert again.stdout.split() == ["c1", "c2", "c3"], (again.stdout, again.stderr[-2000:])
    # DeleteShareGroupOffsets, then DeleteGroups: the group is gone.
    assert "Successful" in share_groups("--delete-offsets", "--group", group, "--topic", topic)
    assert "has no offset information" in share_groups("--describe", "--group", group)
    assert "was successful" in share_groups("--delete", "--group", group)
    assert group not in share_groups("--list").split()


def test_an_http_consumer_and_a_kafka_share_consumer_split_one_queue(node):
    topic, group = f"share-http-{uuid.uuid4().hex[:8]}", f"share-http-{uuid.uuid4().hex[:8]}"
    java(node, "configure", group, "share.auto.offset.reset=earliest")
    produce(node, topic, [f"h{i}" for i in range(400)])
    by_http = []

    def pop_over_http():
        deadline = time.time() + 60
        idle_since = None
        while time.time() < deadline:
            req = f"{node.url}/api/v1/pop/queue/{topic}?consumerGroup={group}&shared=true&batch=7&wait=false"
            with urllib.request.urlopen(req, timeout=10) as r:
                messages = json.load(r)["messages"] if r.status == 200 else []
            if not messages:
                idle_since = idle_since or time.time()
                if time.time() - idle_since > 4:
                    return
                time.sleep(0.1)
                continue
            idle_since = None
            for m in messages:
                by_http.append(m["data"])
            acks = [
                {"transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"],
                 "status": "completed", "consumerGroup": group}
                for m in messages
            ]
            answers = post(node, "/api/v1/ack/batch", {"acknowledgments": acks})
            assert [a.get("success") for a in answers] == [True] * len(acks), answers
            time.sleep(0.02)

    failed = []

    def http_consumer():
        try:
            pop_over_http()
        except Exception as e:  # reported by the test, not lost in the thread
            failed.append(e)

    # The Kafka member starts first and takes a few records at a time, so
    # that however long its JVM takes to start, both have records to split.
    kafka = subprocess.Popen(
        ["java", "-cp", classpath(), "ShareGroups.java", "drain", topic, group, "60", "4", "300"],
        cwd=HERE,
        env=dict(os.environ, BOOTSTRAP=node.bootstrap),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines, first_record = [], threading.Event()

    def read_kafka():
        for line in kafka.stdout:
            lines.append(line)
            if line.startswith("got "):
                first_record.set()

    reader = threading.Thread(target=read_kafka)
    reader.start()
    http = threading.Thread(target=http_consumer)
    if not first_record.wait(90):
        kafka.kill()
        pytest.fail(f"the Kafka share consumer got nothing in 90 s:\n{kafka.stderr.read()[-4000:]}")
    # The consumer-group view (the dashboard's) names the Kafka member.
    with urllib.request.urlopen(f"{node.url}/api/v1/consumer-groups/{group}", timeout=10) as r:
        view = json.load(r)
    members = [m for m in view["members"] if m["kind"] == "kafka"]
    assert view["share"] and len(members) == 1 and members[0]["partitions"] >= 1 and members[0]["clientId"], view
    http.start()
    assert kafka.wait(timeout=120) == 0, kafka.stderr.read()[-4000:]
    reader.join()
    by_kafka = [v for _, _, v in drained("".join(lines))]
    http.join()
    assert not failed, failed
    assert by_http and by_kafka, (len(by_http), len(by_kafka))
    assert not set(by_http) & set(by_kafka), "a record went to both consumers"
    assert sorted(by_http + by_kafka) == sorted(f"h{i}" for i in range(400))


def test_a_share_consumer_renews_its_lock_while_it_works_on_a_record(node):
    """ShareFetch and ShareAcknowledge v2: RENEW holds a record past its
    lock time (3 s) for 8 s, and no other member gets it meanwhile."""
    topic, group = f"share-renew-{uuid.uuid4().hex[:8]}", f"share-renew-{uuid.uuid4().hex[:8]}"
    java(node, "configure", group, "share.auto.offset.reset=earliest", "share.record.lock.duration.ms=3000")
    produce(node, topic, ["slow"])
    out = java(node, "renew", topic, group, "8")
    assert "all checks passed" in out, out
