"""confluent-kafka (librdkafka) against a three-node cluster of real nodes:
an idempotent acks=all producer bootstrapped with every node keeps producing
while the raft leader is killed -9, and every record it was told is written
is then read back at its offset, once; a consumer group that committed
resumes at its committed offsets after a node it used is killed."""

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from conftest import leader


def group_member(nodes, alive, group):
    """A consumer of `group` that commits by hand, bootstrapped with the live nodes."""
    return Consumer(
        {
            "bootstrap.servers": ",".join(nodes[i].bootstrap for i in alive),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )


def read_each_once(consumers, count, within, where, poll_s=1.0):
    """Polls `consumers` in turn, each for up to `poll_s`, until they have
    read `count` records or `within` seconds have passed, failing on a value
    read twice (by one consumer or two); answers value -> where(k, record),
    k the consumer's place in `consumers`, and the errors polled."""
    seen, failed = {}, []
    deadline = time.time() + within
    while len(seen) < count and time.time() < deadline:
        for k, c in enumerate(consumers):
            m = c.poll(poll_s)
            if m is None:
                continue
            if m.error():
                failed.append(str(m.error()))
                continue
            assert m.value() not in seen, f"{m.value()} read twice"
            seen[m.value()] = where(k, m)
    return seen, failed


def kcat_read(kcat, brokers, topic):
    """Every record of `topic` through kcat: (partition, offset, value) rows."""
    import subprocess

    done = subprocess.run(
        [kcat, "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%p|%o|%s\n"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [line.split("|") for line in done.stdout.splitlines() if line]


def explain(nodes, alive, failed):
    """What a reading that fell short saw: the consumers' last errors and
    each node's log tail, printed for the failure report."""
    import re

    print("consumer errors:", failed[-10:])
    # A survivor's log ends in its raft workers' failed calls to the killed
    # node, many a second; what they hide is what the reading needs.
    noise = re.compile(r"heartbeat|Unreachable|stream-replication|update progress error")
    for i, n in enumerate(nodes):
        lines = [line for line in n.log_since(0).splitlines() if not noise.search(line)]
        print(f"---- node {i + 1} ({'alive' if i in alive else 'killed'}):", "\n".join(lines)[-6000:])


def test_an_idempotent_producer_and_a_group_carry_on_through_a_leader_killed(cluster):
    nodes = cluster
    alive = [0, 1, 2]
    first = leader(nodes, alive)
    t = f"failover-{uuid.uuid4().hex[:8]}"
    bootstrap = ",".join(n.bootstrap for n in nodes)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 60000,
        }
    )
    delivered = {}
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[msg.value()] = (msg.partition(), msg.offset())

    for i in range(200):
        p.produce(t, value=f"v{i}".encode(), key=f"k{i % 7}".encode(), on_delivery=on_delivery)
        p.poll(0)
        time.sleep(0.005)
    assert p.flush(30) == 0
    nodes[first].kill9()
    alive.remove(first)
    for i in range(200, 400):
        p.produce(t, value=f"v{i}".encode(), key=f"k{i % 7}".encode(), on_delivery=on_delivery)
        p.poll(0)
        time.sleep(0.005)
    assert p.flush(60) == 0, "records still queued after a minute"
    assert errors == [], errors
    assert len(delivered) == 400
    second = leader(nodes, alive)
    assert second != first

    # Every acknowledged record, read back through the survivors, at its
    # offset and once.
    c = group_member(nodes, alive, f"g-{t}")
    c.subscribe([t])
    seen, failed = read_each_once([c], 400, 60, lambda _, m: (m.partition(), m.offset()))
    if len(seen) < 400:
        explain(nodes, alive, failed)
    # The count first: a diff of 400 records would crowd out the logs above.
    assert len(seen) == 400, f"read {len(seen)} of 400"
    assert seen == delivered
    c.commit(asynchronous=False)
    c.close()

    # The committed offsets survive another node's death: a new member of
    # the group starts where the last one committed, with nothing before it.
    nodes[first].start()
    alive.append(first)
    leader(nodes, alive)
    victim = next(i for i in alive if i != leader(nodes, alive))
    nodes[victim].kill9()
    alive.remove(victim)
    for i in range(400, 410):
        p.produce(t, value=f"v{i}".encode(), key=f"k{i % 7}".encode(), on_delivery=on_delivery)
    assert p.flush(60) == 0 and errors == [], errors
    c = group_member(nodes, alive, f"g-{t}")
    c.subscribe([t])
    later, failed = [], []
    # The group may wait out a member the killed node's connections left
    # behind (its session, 45 s) before it forms again.
    deadline = time.time() + 120
    while len(later) < 10 and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            failed.append(str(m.error()))
            continue
        later.append(m.value())
    c.close()
    if len(later) < 10:
        explain(nodes, alive, failed)
    assert sorted(later) == sorted(f"v{i}".encode() for i in range(400, 410)), (later, failed[-5:])


def test_members_of_one_group_reaching_different_nodes_meet_one_coordinator(cluster):
    """Two members of one group, each bootstrapped with another follower,
    are one group: the raft leader coordinates it, so they split the
    topic's partitions between them and each record is read once."""
    from confluent_kafka.admin import AdminClient, NewTopic

    nodes = cluster
    first = leader(nodes, [0, 1, 2])
    followers = [i for i in range(3) if i != first]
    # Every node names every broker: librdkafka drops one a Metadata answer
    # leaves out, with the requests it had in flight there.
    for n in nodes:
        listed = Producer({"bootstrap.servers": n.bootstrap}).list_topics(timeout=10).brokers
        assert sorted(listed) == [1, 2, 3], (n.bootstrap, listed)
    t = f"split-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": nodes[followers[0]].bootstrap})
    admin.create_topics([NewTopic(t, num_partitions=4, replication_factor=1)])[t].result(30)
    p = Producer({"bootstrap.servers": nodes[first].bootstrap, "acks": "all"})
    for i in range(200):
        p.produce(t, value=f"v{i}".encode(), partition=i % 4)
    assert p.flush(30) == 0

    group = f"g-{t}"
    members = [group_member(nodes, [i], group) for i in followers]
    for c in members:
        c.subscribe([t])
    # A value read by both members would mean two groups, not one.
    # Members polled in quick turns, so that neither holds up the other's
    # rebalance.
    seen, failed = read_each_once(members, 200, 60, lambda k, _: k, poll_s=0.2)
    assignments = [{tp.partition for tp in c.assignment()} for c in members]
    for c in members:
        c.close()
    if len(seen) < 200:
        explain(nodes, [0, 1, 2], failed)
    assert len(seen) == 200, f"read {len(seen)} of 200"
    assert assignments[0].isdisjoint(assignments[1]), assignments
    assert assignments[0] | assignments[1] == {0, 1, 2, 3}, assignments


HERE = __import__("pathlib").Path(__file__).resolve().parent.parent


def java_through_a_leader_kill(nodes, program, cue, **env):
    """Runs the Java program `program` against every node of the cluster,
    kills the raft leader -9 once it prints the line `cue`, tells it to go
    on (a line on its stdin), and answers what it printed after that; it
    must exit 0 saying all checks passed."""
    import os
    import subprocess

    cwd = HERE / "java"
    classpath_file = cwd / "classpath.txt"
    if not classpath_file.exists():
        pytest.fail(f"{classpath_file} is missing: run `mvn dependency:build-classpath -Dmdep.outputFile=classpath.txt`")
    first = leader(nodes, [0, 1, 2])
    java = subprocess.Popen(
        ["java", "-cp", classpath_file.read_text().strip(), program],
        cwd=cwd,
        env=dict(os.environ, BOOTSTRAP=",".join(n.bootstrap for n in nodes), **env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    before = []
    for line in java.stdout:
        before.append(line)
        if line.strip() == cue:
            break
    assert before and before[-1].strip() == cue, "".join(before) + java.stderr.read()
    nodes[first].kill9()
    java.stdin.write("go\n")
    java.stdin.flush()
    out, err = java.communicate(timeout=240)
    assert java.returncode == 0, f"{''.join(before)}{out}\n{err}"
    assert "all checks passed" in out
    return out


def test_the_java_client_produces_and_consumes_through_a_leader_killed(cluster):
    java_through_a_leader_kill(cluster, "Failover.java", "half")


def test_a_consumer_protocol_group_carries_on_through_a_leader_killed(cluster):
    """group.protocol=consumer (KIP-848) on a cluster: the group's state is
    saved through raft before a member is told it, so after the leader's
    kill -9 the new leader coordinates the same members at their epochs;
    no partition is owned by two members at once, every record is
    consumed, and the group then grows and shrinks as on one node."""
    print(java_through_a_leader_kill(cluster, "ConsumerProtocol.java", "ready", FAILOVER="1"))


def test_kcat_produces_and_consumes_through_a_leader_killed(cluster):
    import shutil
    import subprocess

    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.fail("kcat is not installed (scripts/test installs it)")
    nodes = cluster
    brokers = ",".join(n.bootstrap for n in nodes)
    t = f"kcat-failover-{uuid.uuid4().hex[:8]}"

    def produce(lines):
        done = subprocess.run(
            [kcat, "-b", brokers, "-P", "-t", t, "-X", "acks=all", "-X", "enable.idempotence=true", "-X", "message.timeout.ms=60000"],
            input="".join(f"{v}\n" for v in lines),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr

    first = leader(nodes, [0, 1, 2])
    produce([f"a{i}" for i in range(100)])
    nodes[first].kill9()
    alive = [i for i in range(3) if i != first]
    produce([f"b{i}" for i in range(100)])
    survivors = ",".join(nodes[i].bootstrap for i in alive)
    rows = kcat_read(kcat, survivors, t)
    values = sorted(v for _, _, v in rows)
    assert values == sorted([f"a{i}" for i in range(100)] + [f"b{i}" for i in range(100)]), rows[-20:]
    per_partition = {}
    for p, o, _ in rows:
        per_partition.setdefault(p, []).append(int(o))
    for p, offsets in per_partition.items():
        assert offsets == list(range(len(offsets))), f"partition {p} offsets {offsets}"


def test_transactions_carry_on_through_a_leader_killed_in_the_middle_of_them(cluster):
    """A transactional producer commits and aborts transactions over two
    partitions while the leader is killed -9 with one open: the new
    leader's coordinator carries it on or it is aborted; every record of a
    transaction whose commit was acknowledged is read once at
    read_committed, and no record of an aborted one is."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    nodes = cluster
    alive = [0, 1, 2]
    first = leader(nodes, alive)
    t = f"txn-failover-{uuid.uuid4().hex[:8]}"
    bootstrap = ",".join(n.bootstrap for n in nodes)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1)]).values():
        f.result(20)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tid-{t}", "linger.ms": 5,
                  "message.timeout.ms": 60000, "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    committed, aborted = set(), set()

    def transaction(n, commit):
        for attempt in range(10):
            # Each attempt's records are its own: an aborted attempt's must never be read.
            values = [f"t{n}.{attempt}-{i}" for i in range(10)]
            try:
                p.begin_transaction()
                for i, v in enumerate(values):
                    p.produce(t, value=v.encode(), partition=i % 2)
                p.flush(60)
                if commit:
                    p.commit_transaction(60)
                    committed.update(values)
                else:
                    p.abort_transaction(60)
                    aborted.update(values)
                return
            except KafkaException as e:
                # Through the failover: a retriable commit is asked again;
                # one that needs an abort is aborted and done again.
                if commit and e.args[0].retriable():
                    p.commit_transaction(60)
                    committed.update(values)
                    return
                assert e.args[0].txn_requires_abort(), e
                p.abort_transaction(60)
                aborted.update(values)
        raise AssertionError(f"transaction {n} never went through")

    for n in range(10):
        transaction(n, commit=n % 3 != 2)
    # The leader dies with a transaction open.
    p.begin_transaction()
    for i in range(10):
        p.produce(t, value=f"open-{i}".encode(), partition=i % 2)
    p.flush(60)
    nodes[first].kill9()
    alive.remove(first)
    try:
        p.commit_transaction(60)
        committed.update(f"open-{i}" for i in range(10))
    except KafkaException as e:
        if e.args[0].retriable():
            p.commit_transaction(60)
            committed.update(f"open-{i}" for i in range(10))
        else:
            assert e.args[0].txn_requires_abort(), e
            p.abort_transaction(60)
            aborted.update(f"open-{i}" for i in range(10))
    for n in range(10, 20):
        transaction(n, commit=n % 3 != 2)
    assert leader(nodes, alive) != first

    c = Consumer({"bootstrap.servers": ",".join(nodes[i].bootstrap for i in alive), "group.id": f"check-{t}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.subscribe([t])
    seen, errors = [], []
    deadline, idle = time.time() + 60, time.time()
    while time.time() < deadline and (len(seen) < len(committed) or time.time() - idle < 3):
        m = c.poll(0.5)
        if m is not None and m.error():
            errors.append(str(m.error()))
        if m is None or m.error():
            continue
        seen.append(m.value().decode())
        idle = time.time()
    c.close()
    assert len(seen) == len(set(seen)), "a committed record read twice"
    if set(seen) != committed:
        # Once in CI the consumer read nothing at all after the failover:
        # what it was told and what the nodes logged, for the next time.
        for i in alive:
            print(f"--- node {i + 1}'s log, last 6000 characters ---\n{nodes[i].log_since(0)[-6000:]}")
    assert set(seen) == committed, (sorted(committed - set(seen))[:5], sorted(set(seen) - committed)[:5], errors[-10:])
    assert not set(seen) & aborted


def test_a_share_group_carries_on_through_a_leader_killed(cluster):
    """Share groups (KIP-932) on a cluster: acquisitions and acknowledgements
    are raft entries, so after the leader's kill -9 the new leader knows
    every record's state; the members find their new session there, every
    record is received, and one received again only at a higher delivery
    count (an acknowledgement lost with the leader)."""
    print(java_through_a_leader_kill(cluster, "ShareGroups.java", "ready", FAILOVER="1"))
