"""aiokafka against a real node: produce, group consume, commit, resume."""

import asyncio
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


def topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def consume(node, t, group, want):
    c = AIOKafkaConsumer(
        t,
        bootstrap_servers=node.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await c.start()
    got = []
    try:
        async with asyncio.timeout(30):
            async for m in c:
                got.append((m.offset, m.value))
                if len(got) == want:
                    break
        await c.commit()
    finally:
        await c.stop()
    return got


async def test_produce_group_consume_commit_resume(node):
    t = topic("aio")
    g = f"g-{uuid.uuid4().hex[:6]}"
    p = AIOKafkaProducer(bootstrap_servers=node.bootstrap, acks="all", enable_idempotence=True)
    await p.start()
    try:
        offsets = [(await p.send_and_wait(t, f"v{i}".encode())).offset for i in range(12)]
    finally:
        await p.stop()
    assert offsets == list(range(12))
    assert await consume(node, t, g, 8) == [(i, f"v{i}".encode()) for i in range(8)]
    assert await consume(node, t, g, 4) == [(i, f"v{i}".encode()) for i in range(8, 12)]
