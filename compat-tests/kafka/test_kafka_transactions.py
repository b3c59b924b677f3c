"""Kafka transactions with confluent-kafka (librdkafka 2.x) against a real
node: commits and aborts across partitions, read_committed and
read_uncommitted consumers, a consume-transform-produce loop committing its
input offsets in the transaction, a second producer with the same
transactional id fencing the first, a transaction left open past its
timeout aborted by the coordinator, and HTTP pops that see only what
transactions committed."""

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(node, t, partitions):
    a = AdminClient({"bootstrap.servers": node.bootstrap})
    for f in a.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1)]).values():
        f.result(10)


def txn_producer(node, txn_id, **extra):
    conf = {"bootstrap.servers": node.bootstrap, "transactional.id": txn_id, "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(30)
    return p


def consumer(node, group, isolation, **extra):
    conf = {
        "bootstrap.servers": node.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    }
    conf.update(extra)
    return Consumer(conf)


def read_values(node, t, isolation, want=None, idle=3.0, timeout=30):
    """Every value a fresh consumer reads from `t` until `want` values or
    `idle` seconds with nothing new."""
    c = consumer(node, name("reader"), isolation)
    c.subscribe([t])
    got, last, deadline = [], time.time(), time.time() + timeout
    try:
        while time.time() < deadline and time.time() - last < idle:
            if want is not None and len(got) >= want:
                break
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                continue
            got.append(m.value().decode())
            last = time.time()
    finally:
        c.close()
    return got


def test_committed_records_are_read_once_and_aborted_ones_only_by_read_uncommitted(node):
    t = name("txn")
    create_topic(node, t, 3)
    p = txn_producer(node, name("tid"))
    p.begin_transaction()
    for i in range(30):
        p.produce(t, value=f"c1-{i}", partition=i % 3)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(30):
        p.produce(t, value=f"a-{i}", partition=i % 3)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(30):
        p.produce(t, value=f"c2-{i}", partition=i % 3)
    p.commit_transaction(30)

    committed = read_values(node, t, "read_committed", want=60)
    assert sorted(committed) == sorted([f"c1-{i}" for i in range(30)] + [f"c2-{i}" for i in range(30)])
    everything = read_values(node, t, "read_uncommitted", want=90)
    assert sorted(everything) == sorted(
        [f"c1-{i}" for i in range(30)] + [f"a-{i}" for i in range(30)] + [f"c2-{i}" for i in range(30)])


def test_an_open_transaction_holds_read_committed_consumers_at_its_first_offset(node):
    t = name("open")
    create_topic(node, t, 1)
    p = txn_producer(node, name("tid"))
    p.begin_transaction()
    p.produce(t, value="before")
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(t, value="pending")
    p.flush(30)
    # The last stable offset is the open transaction's first offset.
    c = consumer(node, name("lso"), "read_committed")
    low, high = c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)
    assert (low, high) == (0, 2), (low, high)
    c.close()
    assert read_values(node, t, "read_committed", idle=2) == ["before"]
    assert read_values(node, t, "read_uncommitted", want=2) == ["before", "pending"]
    p.commit_transaction(30)
    assert read_values(node, t, "read_committed", want=2) == ["before", "pending"]


def test_consume_transform_produce_commits_input_offsets_with_the_output(node):
    source, sink = name("in"), name("out")
    create_topic(node, source, 2)
    create_topic(node, sink, 2)
    seed = Producer({"bootstrap.servers": node.bootstrap, "enable.idempotence": True})
    for i in range(40):
        seed.produce(source, value=str(i), partition=i % 2)
    assert seed.flush(30) == 0

    group = name("copier")

    def copy(limit, commit):
        """Copies up to `limit` records in one transaction, committed or
        aborted, with the input offsets sent to it."""
        c = consumer(node, group, "read_committed")
        c.subscribe([source])
        p = txn_producer(node, name("tid"))
        p.begin_transaction()
        copied, deadline = 0, time.time() + 30
        while copied < limit and time.time() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            p.produce(sink, value=f"copy-{m.value().decode()}", partition=m.partition())
            copied += 1
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
        c.close()
        return copied

    assert copy(15, commit=False) == 15
    # The abort dropped both the output and the offsets: everything is copied again.
    assert copy(40, commit=True) == 40
    out = read_values(node, sink, "read_committed", want=40)
    assert sorted(out) == sorted(f"copy-{i}" for i in range(40))
    c = consumer(node, group, "read_committed")
    committed = c.committed([TopicPartition(source, 0), TopicPartition(source, 1)], timeout=10)
    assert [tp.offset for tp in committed] == [20, 20], committed
    c.close()


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(node):
    t = name("fence")
    create_topic(node, t, 1)
    tid = name("tid")
    first = txn_producer(node, tid)
    first.begin_transaction()
    first.produce(t, value="zombie")
    first.flush(30)
    second = txn_producer(node, tid)
    # The second's init aborted what the first left open.
    second.begin_transaction()
    second.produce(t, value="live")
    second.commit_transaction(30)
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(30)
    assert fenced.value.args[0].fatal(), fenced.value
    assert read_values(node, t, "read_committed", want=1) == ["live"]


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced(node):
    t = name("timeout")
    create_topic(node, t, 1)
    p = txn_producer(node, name("tid"), **{"transaction.timeout.ms": 2000})
    p.begin_transaction()
    p.produce(t, value="late")
    p.flush(30)
    time.sleep(4)
    with pytest.raises(KafkaException) as refused:
        p.commit_transaction(30)
    error = refused.value.args[0]
    assert error.fatal() or error.txn_requires_abort(), error
    assert read_values(node, t, "read_committed", idle=2) == []
    assert read_values(node, t, "read_uncommitted", want=1) == ["late"]


def test_a_timeout_over_the_maximum_is_refused_at_init(node):
    p = Producer({"bootstrap.servers": node.bootstrap, "transactional.id": name("tid"),
                  "transaction.timeout.ms": 3_600_000})
    with pytest.raises(KafkaException) as refused:
        p.init_transactions(10)
    assert refused.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, refused.value


async def test_http_pops_a_transactions_records_only_after_its_commit_and_never_after_an_abort(node, client):
    t = name("http")
    create_topic(node, t, 1)
    p = txn_producer(node, name("tid"))

    async def pop(group=None):
        q = client.queue(t)
        if group:
            q = q.group(group)
        msgs = await q.batch(100).wait(False).pop()
        if msgs:
            context = {"group": group} if group else None
            assert (await client.ack(msgs, True, context))["success"] is True
        return [m["data"] for m in msgs]

    p.begin_transaction()
    for i in range(3):
        p.produce(t, value=json.dumps({"n": i}).encode())
    p.flush(30)
    assert await pop() == [], "a record of an open transaction is popped"
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(3, 6):
        p.produce(t, value=json.dumps({"n": i}).encode())
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(t, value=json.dumps({"n": 6}).encode())
    p.commit_transaction(30)
    # Queue mode and a consumer group each read the committed records once;
    # markers and the aborted records are not messages.
    assert await pop() == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 6}]
    assert await pop() == []
    assert await pop("billing") == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 6}]
    assert await pop("billing") == []
