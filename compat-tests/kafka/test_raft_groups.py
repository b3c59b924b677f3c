"""Kafka clients against three real nodes founded with QUEEN_RAFT_GROUPS=4:
each topic lives in one of the raft groups 1 to 3, and each of those groups
is led by its own node, so the clients produce to and consume from topics
whose partitions are led by different nodes (a node forwards what it does
not lead to the leader of the partition's group). Through a kill -9 of one
group's leader, confluent-kafka, kcat and the Java client go on, and every
record they were told is written is read back at its offset, once, each
partition's offsets gapless."""

import json
import shutil
import subprocess
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import health, three_nodes
from test_cluster_failover import group_member, java_through_a_leader_kill, kcat_read, read_each_once

GROUPS = 4


@pytest.fixture
def groups_cluster():
    nodes = three_nodes({"QUEEN_RAFT_GROUPS": str(GROUPS)})
    yield nodes
    for n in nodes:
        n.stop()


def spread_leaders(nodes):
    """Each group's leader (a node id) once every node agrees and the data
    groups 1 to 3 are led by three different nodes, as the balancer
    spreads them."""
    deadline = time.time() + 60
    seen = None
    while time.time() < deadline:
        try:
            views = [[g["leader"] for g in health(n)["groups"]] for n in nodes]
        except OSError:
            views = []
        if views and all(v == views[0] for v in views) and len(set(views[0][1:])) == GROUPS - 1:
            return views[0]
        seen = views
        time.sleep(0.2)
    raise AssertionError(f"the groups' leaders did not spread: {seen}")


def raft_group(node, queue):
    with urllib.request.urlopen(f"{node.url}/api/v1/resources/queues/{queue}", timeout=5) as r:
        return json.load(r)["raftGroup"]


def topic_per_group(nodes, prefix):
    """A topic of three partitions in each data group: {group: topic}."""
    names = [f"{prefix}-{uuid.uuid4().hex[:6]}-{i}" for i in range(12)]
    admin = AdminClient({"bootstrap.servers": ",".join(n.bootstrap for n in nodes)})
    for future in admin.create_topics([NewTopic(t, 3, 1) for t in names]).values():
        future.result(30)
    placed = {}
    for t in names:
        placed.setdefault(raft_group(nodes[0], t), t)
    assert sorted(placed) == [1, 2, 3], placed
    return placed


def assert_gapless(rows):
    """rows: (topic, partition, offset): each partition's offsets 0, 1, ..."""
    per_partition = {}
    for topic, partition, offset in rows:
        per_partition.setdefault((topic, partition), []).append(offset)
    for key, offsets in per_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), f"{key} offsets {sorted(offsets)}"


def test_confluent_kafka_across_groups_led_by_different_nodes_through_a_kill(groups_cluster):
    nodes = groups_cluster
    leaders = spread_leaders(nodes)
    topics = topic_per_group(nodes, "grouped")
    p = Producer(
        {
            "bootstrap.servers": ",".join(n.bootstrap for n in nodes),
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 90000,
        }
    )
    delivered, errors = {}, []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[msg.value()] = (msg.topic(), msg.partition(), msg.offset())

    def produce(first, last):
        for i in range(first, last):
            p.produce(topics[1 + i % 3], value=f"v{i}".encode(), key=f"k{i % 7}".encode(), on_delivery=on_delivery)
            p.poll(0)
            time.sleep(0.002)

    produce(0, 300)
    assert p.flush(30) == 0
    # Group 2's leader goes: its topic waits for the election, the others
    # do not.
    victim = leaders[2] - 1
    nodes[victim].kill9()
    alive = [i for i in range(3) if i != victim]
    produce(300, 600)
    assert p.flush(90) == 0, "records still queued after 90 s"
    assert errors == [], errors
    assert len(delivered) == 600

    c = group_member(nodes, alive, f"g-{topics[1]}")
    c.subscribe(list(topics.values()))
    seen, failed = read_each_once([c], 600, 90, lambda _, m: (m.topic(), m.partition(), m.offset()))
    c.close()
    assert seen == delivered, (len(seen), failed[-5:])
    assert_gapless(seen.values())


def test_kcat_across_groups_led_by_different_nodes_through_a_kill(groups_cluster):
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.fail("kcat is not installed (scripts/test installs it)")
    nodes = groups_cluster
    leaders = spread_leaders(nodes)
    topics = topic_per_group(nodes, "kcat-grouped")
    brokers = ",".join(n.bootstrap for n in nodes)

    def produce(topic, lines):
        done = subprocess.run(
            [kcat, "-b", brokers, "-P", "-t", topic, "-X", "acks=all", "-X", "enable.idempotence=true"]
            + ["-X", "message.timeout.ms=90000"],
            input="".join(f"{v}\n" for v in lines),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr

    for g, t in topics.items():
        produce(t, [f"a{g}-{i}" for i in range(50)])
    # The node that leads group 3 leads group 0 too: the coordinators' group.
    victim = leaders[3] - 1
    nodes[victim].kill9()
    survivors = ",".join(nodes[i].bootstrap for i in range(3) if i != victim)
    for g, t in topics.items():
        produce(t, [f"b{g}-{i}" for i in range(50)])
    for g, t in topics.items():
        rows = kcat_read(kcat, survivors, t)
        values = sorted(v for _, _, v in rows)
        wanted = sorted([f"a{g}-{i}" for i in range(50)] + [f"b{g}-{i}" for i in range(50)])
        assert values == wanted, rows[-20:]
        assert_gapless((t, p, int(o)) for p, o, _ in rows)


def test_the_java_client_across_groups_led_by_different_nodes_through_a_kill(groups_cluster):
    """The Java client writes across a topic of each data group; the test
    kills the node that leads group 0 (and group 3) halfway."""
    nodes = groups_cluster
    spread_leaders(nodes)
    topics = topic_per_group(nodes, "java-grouped")
    java_through_a_leader_kill(nodes, "Failover.java", "half", TOPICS=",".join(topics.values()))
