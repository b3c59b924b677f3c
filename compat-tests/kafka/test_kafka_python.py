"""kafka-python against a real node: produce, group consume, commit, and a
new consumer of the group resuming at the committed offsets."""

import uuid

from kafka import KafkaConsumer, KafkaProducer


def topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def consume(node, t, group, want):
    c = KafkaConsumer(
        t,
        bootstrap_servers=node.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    got = []
    for m in c:
        got.append((m.offset, m.key, m.value))
        if len(got) == want:
            break
    c.commit()
    c.close()
    return got


def test_produce_group_consume_commit_resume(node):
    t = topic("kpy")
    g = f"g-{uuid.uuid4().hex[:6]}"
    p = KafkaProducer(bootstrap_servers=node.bootstrap, acks="all")
    for i in range(20):
        p.send(t, key=b"k", value=f"v{i}".encode())
    p.flush()
    assert consume(node, t, g, 10) == [(i, b"k", f"v{i}".encode()) for i in range(10)]
    assert consume(node, t, g, 10) == [(i, b"k", f"v{i}".encode()) for i in range(10, 20)]
    for i in range(20, 23):
        meta = p.send(t, value=f"v{i}".encode()).get(timeout=30)
        assert meta.offset == i
    p.close()
    assert [o for o, _, _ in consume(node, t, g, 3)] == [20, 21, 22]
