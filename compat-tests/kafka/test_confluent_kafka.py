"""confluent-kafka (librdkafka 2.x) against a real node: the idempotent
producer in every compression, a three-member consumer group over six
partitions that rebalances and resumes after a node restart, the admin
client, offsets by timestamp, and retention.ms moving the log start."""

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)


def topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def producer(node, **extra):
    conf = {"bootstrap.servers": node.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    conf.update(extra)
    return Producer(conf)


def produce_all(p, t, values, partition=None, key=None, headers=None):
    delivered = []

    def on_delivery(err, msg):
        assert err is None, err
        delivered.append((msg.partition(), msg.offset(), msg.value()))

    for v in values:
        kwargs = {"value": v, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if key is not None:
            kwargs["key"] = key
        if headers is not None:
            kwargs["headers"] = headers
        p.produce(t, **kwargs)
    assert p.flush(30) == 0
    return delivered


def consumer(node, group, **extra):
    conf = {
        "bootstrap.servers": node.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }
    conf.update(extra)
    return Consumer(conf)


def admin(node):
    return AdminClient({"bootstrap.servers": node.bootstrap})


def create_topic(node, t, partitions):
    a = admin(node)  # held until the futures resolve: a dropped client cancels them
    for f in a.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1)]).values():
        f.result(30)


def set_retention_ms(a, t, ms):
    entry = ConfigEntry("retention.ms", str(ms), incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[entry])
    a.incremental_alter_configs([resource])[resource].result(30)


def drain(c, want, timeout=30):
    got = []
    deadline = time.time() + timeout
    while len(got) < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(m)
    return got


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_idempotent_producer_in_each_compression_reads_back_as_sent(node, compression):
    t = topic(f"cfk-{compression}")
    values = [f"{compression}-{i}-".encode() * 20 for i in range(200)]
    p = producer(node, **{"compression.type": compression})
    delivered = produce_all(p, t, values, key=b"the-key", headers=[("h", b"v")])
    assert sorted(o for _, o, _ in delivered) == list(range(200))
    c = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
    c.subscribe([t])
    got = drain(c, 200)
    c.close()
    assert [m.value() for m in got] == values
    assert [m.offset() for m in got] == list(range(200))
    assert all(m.key() == b"the-key" and m.headers() == [("h", b"v")] for m in got)


def test_null_value_key_and_header_read_back_as_null_not_empty(node):
    t = topic("cfk-null")
    p = producer(node)
    p.produce(t, value=None, key=b"gone", headers=[("h", None), ("e", b"")])  # a tombstone
    p.produce(t, value=b"", key=None, headers=[("h", b"")])
    p.produce(t, value=b"v", key=b"")
    assert p.flush(30) == 0
    c = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
    c.subscribe([t])
    got = drain(c, 3)
    c.close()
    assert [(m.value(), m.key()) for m in got] == [(None, b"gone"), (b"", None), (b"v", b"")]
    assert got[0].headers() == [("h", None), ("e", b"")]
    assert got[1].headers() == [("h", b"")]


def test_headers_read_back_as_the_list_produced_repeated_keys_and_order_kept(node):
    # Kafka keeps a record's headers as a list: tracing and routing headers
    # repeat keys, and consumers read them in the producer's order.
    t = topic("cfk-headers")
    headers = [("trace", b"a"), ("route", b"x"), ("trace", b"b"), ("trace", None), ("route", b"")]
    for compression in ["none", "zstd"]:
        produce_all(producer(node, **{"compression.type": compression}), t, [compression.encode()], headers=headers)
    c = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
    c.subscribe([t])
    got = drain(c, 2)
    c.close()
    assert [m.value() for m in got] == [b"none", b"zstd"]
    assert [m.headers() for m in got] == [headers, headers]


def test_large_records_within_fetch_max_bytes_are_consumed_without_errors(node):
    # librdkafka drops a connection whose answer exceeds receive.message.max.bytes
    # ("Invalid response size"), which it must set at least 512 bytes above
    # fetch.max.bytes: fetches must keep within fetch.max.bytes.
    t = topic("cfk-large")
    create_topic(node, t, 4)
    values = [bytes([i]) * 300_000 for i in range(24)]
    p = producer(node)
    for i, v in enumerate(values):
        p.produce(t, value=v, partition=i % 4)
    assert p.flush(30) == 0
    c = consumer(
        node,
        f"g-{uuid.uuid4().hex[:6]}",
        **{"fetch.max.bytes": 1_048_576, "receive.message.max.bytes": 1_048_576 + 512},
    )
    c.subscribe([t])
    got = drain(c, 24)
    c.close()
    assert sorted(m.value()[0] for m in got) == list(range(24))


def test_three_members_over_six_partitions_rebalance_and_resume_after_restart(node):
    t = topic("cfk-group")
    g = f"g-{uuid.uuid4().hex[:6]}"
    create_topic(node, t, 6)
    p = producer(node)
    for part in range(6):
        produce_all(p, t, [f"p{part}-{i}".encode() for i in range(10)], partition=part)

    seen = {}
    lock = threading.Lock()
    stop = {m: threading.Event() for m in range(3)}
    assignments = {m: set() for m in range(3)}

    def member(n):
        c = consumer(node, g)

        def on_assign(consumer_, parts):
            with lock:
                assignments[n] = {tp.partition for tp in parts}

        def on_revoke(consumer_, parts):
            with lock:
                assignments[n] = set()

        c.subscribe([t], on_assign=on_assign, on_revoke=on_revoke)
        while not stop[n].is_set():
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            with lock:
                seen[(m.partition(), m.offset())] = m.value()
            c.commit(message=m, asynchronous=False)
        c.close()

    threads = [threading.Thread(target=member, args=(n,)) for n in range(3)]
    for th in threads:
        th.start()
    deadline = time.time() + 60
    while time.time() < deadline:
        with lock:
            sizes = sorted(len(a) for a in assignments.values())
            if sizes == [2, 2, 2] and len(seen) == 60:
                break
        time.sleep(0.2)
    with lock:
        assert sorted(len(a) for a in assignments.values()) == [2, 2, 2], assignments
        assert set().union(*assignments.values()) == set(range(6))
        assert len(seen) == 60

    # One member leaves: the other two take over all six partitions.
    stop[0].set()
    threads[0].join()
    deadline = time.time() + 60
    while time.time() < deadline:
        with lock:
            if set().union(assignments[1], assignments[2]) == set(range(6)):
                break
        time.sleep(0.2)
    with lock:
        assert set().union(assignments[1], assignments[2]) == set(range(6)), assignments
    for n in (1, 2):
        stop[n].set()
    for th in threads[1:]:
        th.join()

    # The node restarts; the group resumes at its committed offsets.
    node.restart_after_kill()
    p = producer(node)
    for part in range(6):
        produce_all(p, t, [f"after-{part}".encode()], partition=part)
    c = consumer(node, g)
    c.subscribe([t])
    got = drain(c, 6, timeout=60)
    extra = drain(c, 1, timeout=2)
    c.close()
    assert sorted((m.partition(), m.offset(), m.value()) for m in got) == [
        (part, 10, f"after-{part}".encode()) for part in range(6)
    ]
    assert extra == []


def test_admin_creates_grows_describes_and_deletes(node):
    a = admin(node)
    t = topic("cfk-admin")
    create_topic(node, t, 2)
    with pytest.raises(KafkaException) as exists:
        a.create_topics([NewTopic(t, num_partitions=2, replication_factor=1)])[t].result(30)
    assert "already exists" in str(exists.value).lower() or "TOPIC_ALREADY_EXISTS" in str(exists.value)

    a.create_partitions([NewPartitions(t, 5)])[t].result(30)
    meta = a.list_topics(t, timeout=10)
    assert len(meta.topics[t].partitions) == 5

    resource = ConfigResource(ConfigResource.Type.TOPIC, t)
    configs = a.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "-1"
    assert configs["cleanup.policy"].value == "delete"

    cluster = a.describe_cluster().result(30)
    assert len(cluster.nodes) == 1 and cluster.controller.id == cluster.nodes[0].id

    a.delete_topics([t])[t].result(30)
    assert t not in a.list_topics(timeout=10).topics


def test_max_message_bytes_of_a_topic_is_the_largest_batch_it_takes(node):
    # A topic made for large records takes a 5 MB one; a topic without the
    # setting holds to the node's message.max.bytes (4 MiB); AlterConfigs
    # lowers a topic's, as Kafka applies them.
    a = admin(node)
    large, plain = topic("cfk-large-ok"), topic("cfk-large-no")
    made = a.create_topics(
        [
            NewTopic(large, num_partitions=1, replication_factor=1, config={"max.message.bytes": "10485760"}),
            NewTopic(plain, num_partitions=1, replication_factor=1),
        ]
    )
    for f in made.values():
        f.result(30)
    described = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in (large, plain)])
    limits = {r.name: f.result(30)["max.message.bytes"].value for r, f in described.items()}
    assert limits == {large: "10485760", plain: str(4 * 1024 * 1024)}

    record = bytes(range(256)) * (5 * 1024 * 1024 // 256)
    big = producer(node, **{"message.max.bytes": 20_000_000, "compression.type": "none"})
    assert produce_all(big, large, [record]) == [(0, 0, record)]
    errors = []
    big.produce(plain, value=record, on_delivery=lambda err, msg: errors.append(err))
    big.flush(30)
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE], errors

    c = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
    c.subscribe([large])
    got = drain(c, 1)
    c.close()
    assert [m.value() for m in got] == [record]

    entry = ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, large, incremental_configs=[entry])
    a.incremental_alter_configs([resource])[resource].result(30)
    errors = []
    big.produce(large, value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    big.flush(30)
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE], errors


def test_a_log_append_time_topic_stamps_records_with_the_time_of_their_append(node):
    # A producer's timestamps an hour old: on a LogAppendTime topic the
    # delivery report and the consumer both read the broker's append time,
    # typed TIMESTAMP_LOG_APPEND_TIME; on a CreateTime topic the producer's.
    from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

    a = admin(node)
    stamped, own = topic("cfk-append"), topic("cfk-create")
    config = {"message.timestamp.type": "LogAppendTime"}
    made = a.create_topics(
        [
            NewTopic(stamped, num_partitions=1, replication_factor=1, config=config),
            NewTopic(own, num_partitions=1, replication_factor=1),
        ]
    )
    for f in made.values():
        f.result(30)
    described = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in (stamped, own)])
    kinds = {r.name: f.result(30)["message.timestamp.type"].value for r, f in described.items()}
    assert kinds == {stamped: "LogAppendTime", own: "CreateTime"}

    hour_ago = int(time.time() * 1000) - 3_600_000
    for t in (stamped, own):
        reports = []
        p = producer(node)
        before = int(time.time() * 1000)
        for i in range(5):
            p.produce(t, value=f"v{i}".encode(), timestamp=hour_ago + i, on_delivery=lambda e, m: reports.append((e, m)))
        assert p.flush(30) == 0
        after = int(time.time() * 1000)
        assert all(e is None for e, _ in reports), reports
        c = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
        c.subscribe([t])
        got = drain(c, 5)
        c.close()
        if t == stamped:
            for m in [m for _, m in reports] + got:
                kind, at = m.timestamp()
                assert kind == TIMESTAMP_LOG_APPEND_TIME and before - 1000 <= at <= after + 1000, (kind, at)
        else:
            assert [m.timestamp() for m in got] == [(TIMESTAMP_CREATE_TIME, hour_ago + i) for i in range(5)]


def test_offsets_for_times(node):
    t = topic("cfk-time")
    p = producer(node)
    produce_all(p, t, [b"early-0", b"early-1"])
    time.sleep(0.3)
    middle = int(time.time() * 1000)
    time.sleep(0.3)
    produce_all(p, t, [b"late-2"])
    c = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
    found = c.offsets_for_times([TopicPartition(t, 0, middle)], timeout=10)
    assert found[0].offset == 2
    beyond = c.offsets_for_times([TopicPartition(t, 0, middle + 3_600_000)], timeout=10)
    assert beyond[0].offset == -1
    low, high = c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)
    assert (low, high) == (0, 3)
    c.close()


def test_retention_ms_moves_the_log_start_and_committed_offsets_past_expired_records(node):
    t = topic("cfk-retention")
    create_topic(node, t, 1)
    produce_all(producer(node), t, [f"old-{i}".encode() for i in range(20)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    c = consumer(node, group)
    c.commit(offsets=[TopicPartition(t, 0, 5)], asynchronous=False)
    a = admin(node)
    set_retention_ms(a, t, 2000)

    # Retention runs every 5 s: within a few rounds every old record is gone.
    deadline = time.time() + 20
    while c.get_watermark_offsets(TopicPartition(t, 0), timeout=10) != (20, 20):
        assert time.time() < deadline, c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)
        time.sleep(0.3)
    assert c.committed([TopicPartition(t, 0)], timeout=10)[0].offset == 20

    # A reader from the beginning starts at the log start, and new records
    # (kept for an hour now) follow it.
    set_retention_ms(a, t, 3_600_000)
    produce_all(producer(node), t, [b"new-20"])
    reader = consumer(node, f"g-{uuid.uuid4().hex[:6]}")
    reader.assign([TopicPartition(t, 0, -2)])  # OFFSET_BEGINNING
    got = drain(reader, 1, timeout=30)
    reader.close()
    c.close()
    assert [(m.offset(), m.value()) for m in got] == [(20, b"new-20")]
