"""Both front ends on the same partitions: a Kafka record is popped and acked
over HTTP at its offset, an HTTP push is fetched by a Kafka consumer, a
group's Kafka commits are its HTTP cursor, and an HTTP push to a new
partition shows up in Kafka metadata."""

import json
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from queen import Queen


def topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(node, t, values, key=None):
    p = Producer({"bootstrap.servers": node.bootstrap, "acks": "all", "enable.idempotence": True})
    offsets = []

    def on_delivery(err, msg):
        assert err is None, err
        offsets.append(msg.offset())

    for v in values:
        p.produce(t, value=v, key=key, on_delivery=on_delivery)
    assert p.flush(30) == 0
    return offsets


def kafka_read(node, t, partition=0, start=0, want=1, group=None):
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group or f"reader-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(t, partition, start)])
    got = []
    deadline = time.time() + 30
    while len(got) < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    c.close()
    return got


async def test_kafka_produce_then_http_pop_and_ack_at_the_same_offsets(node, client):
    t = topic("x-k2h")
    offsets = produce(node, t, [json.dumps({"n": i}).encode() for i in range(5)], key=b"order-7")
    msgs = await client.queue(t).batch(5).wait(False).pop()
    assert [m["offset"] for m in msgs] == offsets == list(range(5))
    assert [m["data"] for m in msgs] == [{"n": i} for i in range(5)]
    assert all(m["kafka"]["key"] == "order-7" for m in msgs)
    assert (await client.ack(msgs, True))["success"] is True
    assert await client.queue(t).batch(5).wait(False).pop() == []


async def test_http_push_json_and_binary_then_kafka_fetch(node, client):
    t = topic("x-h2k")
    await client.queue(t).partition("0").push([{"data": {"via": "json"}, "transactionId": "tx-json"}])
    binary = Queen(node.url, binary_push=True)
    try:
        await binary.queue(t).partition("0").push([{"data": {"via": "binary"}}])
    finally:
        await binary.close()
    got = kafka_read(node, t, want=2)
    assert [m.offset() for m in got] == [0, 1]
    assert [json.loads(m.value()) for m in got] == [{"via": "json"}, {"via": "binary"}]
    assert dict(got[0].headers())["queen-transaction-id"] == b"tx-json"


async def test_kafka_group_commits_then_http_pop_continues_from_there(node, client):
    t = topic("x-group")
    g = f"g-{uuid.uuid4().hex[:6]}"
    produce(node, t, [json.dumps(i).encode() for i in range(6)])
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": g,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([t])
    seen = []
    deadline = time.time() + 30
    while len(seen) < 4 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.append(m.offset())
            if len(seen) == 4:
                c.commit(message=m, asynchronous=False)
    c.close()
    assert seen == [0, 1, 2, 3]
    msgs = await client.queue(t).group(g).batch(10).wait(False).pop()
    assert [m["offset"] for m in msgs] == [4, 5]
    assert (await client.ack(msgs, True, {"group": g}))["success"] is True
    # And back: the HTTP acks moved the cursor Kafka reads as the committed offset.
    c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": g})
    committed = c.committed([TopicPartition(t, 0)], timeout=10)
    c.close()
    assert committed[0].offset == 6


async def test_http_push_to_a_new_partition_appears_to_kafka(node, client):
    t = topic("x-grow")
    produce(node, t, [b"first"])
    await client.queue(t).partition("tenant-b").push([{"data": "to-b"}])
    c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "meta"})
    meta = c.list_topics(t, timeout=10)
    c.close()
    assert sorted(meta.topics[t].partitions) == [0, 1]
    got = kafka_read(node, t, partition=1, want=1)
    assert [json.loads(m.value()) for m in got] == ["to-b"]


async def test_a_kafka_tombstone_reads_as_json_null_over_http(node, client):
    t = topic("x-null")
    p = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    p.produce(t, value=None, key=b"k", headers=[("h", None)])
    p.produce(t, value=b"", key=b"k")
    assert p.flush(30) == 0
    msgs = await client.queue(t).batch(2).wait(False).pop()
    assert [m["data"] for m in msgs] == [None, ""]
    assert msgs[0]["kafka"]["headers"] == {"h": None}
