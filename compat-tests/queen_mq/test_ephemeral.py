"""Ephemeral queues through the queen-mq client: push, pop with leases and
acks, redelivery, groups, bounds, depth, and a declaration that survives a
restart while the contents do not."""

import asyncio
import uuid

import pytest

from conftest import Node


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_push_pop_ack_and_redelivery(client):
    q = name("eph")
    assert (await client.ephemeral.push(q, [{"n": 1}, {"n": 2}]))["pushed"] == 2
    first = await client.ephemeral.pop(q, batch=1)
    assert [m["payload"] for m in first["messages"]] == [{"n": 1}] and first["messages"][0]["attempts"] == 1
    nack = await client.ephemeral.ack(q, first["messages"], status=False)
    assert nack["results"][0]["outcome"] == "redelivered"
    again = await client.ephemeral.pop(q, batch=5)
    assert [m["payload"] for m in again["messages"]] == [{"n": 1}, {"n": 2}]
    assert again["messages"][0]["attempts"] == 2
    done = await client.ephemeral.ack(q, again["messages"])
    assert [r["outcome"] for r in done["results"]] == ["acked", "acked"]
    assert (await client.ephemeral.pop(q, batch=5))["messages"] == []
    assert (await client.ephemeral.ack(q, again["messages"]))["results"][0]["outcome"] == "unknown"


async def test_groups_fan_out_and_bounds_reject(client, node):
    import httpx

    q = name("eph")
    await client.ephemeral.configure(q, {"maxLength": 2, "policy": "reject"})
    await client.ephemeral.push(q, [{"a": 1}, {"a": 2}])
    async with httpx.AsyncClient(base_url=node.url) as http:
        r = await http.post("/api/v1/ephemeral/push", json={"queue": q, "messages": [{"payload": {"a": 3}}]})
        assert r.status_code == 409 and r.json()["code"] == "queue_full"
    got = {}
    for g in ("g1", "g2"):
        got[g] = await client.ephemeral.pop(q, batch=5, group=g)
        assert [m["payload"]["a"] for m in got[g]["messages"]] == [1, 2]
    for g in ("g1", "g2"):
        acked = await client.ephemeral.ack(q, got[g]["messages"], group=g)
        assert [r["outcome"] for r in acked["results"]] == ["acked", "acked"]
    depth = await client.ephemeral.depth(q)
    assert depth["queue"] == q and depth["pending"] == 0
    listed = await client.ephemeral.queues()
    assert any(r["queue"] == q and r["tier"] == "declared" for r in listed["queues"])


async def test_long_poll_wakes_on_push(client):
    q = name("eph")

    async def later():
        await asyncio.sleep(0.3)
        await client.ephemeral.push(q, [{"late": True}])

    task = asyncio.create_task(later())
    got = await client.ephemeral.pop(q, wait=True, timeout=5000)
    await task
    assert [m["payload"] for m in got["messages"]] == [{"late": True}]


async def test_declaration_survives_a_restart_and_contents_do_not():
    from queen import Queen
    from queen.errors import EphemeralQueueNotFoundError

    node = Node()
    try:
        client = Queen(node.url)
        await client.ephemeral.configure("kept", {"maxLength": 7})
        await client.ephemeral.push("kept", [{"x": 1}])
        await client.ephemeral.push("implicit", [{"x": 1}])
        await client.close()
        node.restart_after_kill()
        client = Queen(node.url)
        listed = await client.ephemeral.queues()
        rows = {r["queue"]: r for r in listed["queues"]}
        assert rows["kept"]["options"]["maxLength"] == 7 and rows["kept"]["depth"] == 0
        assert "implicit" not in rows
        with pytest.raises(EphemeralQueueNotFoundError):
            await client.ephemeral.depth("implicit")
        assert (await client.ephemeral.delete("kept"))["deleted"] is True
        await client.close()
    finally:
        node.stop()


async def test_a_window_buffer_lets_a_waiting_pop_gather_a_fuller_batch(client):
    q = name("eph-window")
    answer = await client.ephemeral.configure(q, window_buffer={"ms": 1500, "count": 3})
    assert answer["options"]["windowBuffer"] == {"ms": 1500, "count": 3}

    async def trickle():
        await asyncio.sleep(0.2)
        await client.ephemeral.push(q, [{"n": 1}])
        await asyncio.sleep(0.3)
        await client.ephemeral.push(q, [{"n": 2}, {"n": 3}])

    pushing = asyncio.create_task(trickle())
    got = await client.ephemeral.pop(q, batch=10, wait=True, timeout_millis=5000)
    await pushing
    assert [m["payload"] for m in got["messages"]] == [{"n": 1}, {"n": 2}, {"n": 3}], "one batch, not the first alone"


async def test_idle_implicit_queues_are_collected_and_declared_ones_stay():
    from queen import Queen

    n = Node(env={"QUEEN_EPHEMERAL_IDLE_S": "1"})
    q = Queen(n.url)
    try:
        implicit, declared, busy = name("eph-idle"), name("eph-kept"), name("eph-busy")
        await q.ephemeral.configure(declared, {"maxLength": 5})
        await q.ephemeral.push(implicit, [{"n": 1}])
        got = await q.ephemeral.pop(implicit, batch=5)
        await q.ephemeral.ack(implicit, got["messages"])
        await q.ephemeral.push(busy, [{"n": 1}])  # still holds a message
        await asyncio.sleep(3)
        listed = await q.ephemeral.queues()
        names = {e["queue"] for e in listed["queues"]}
        assert declared in names and busy in names
        assert implicit not in names, "an empty implicit queue idle past QUEEN_EPHEMERAL_IDLE_S is collected"
    finally:
        await q.close()
        n.stop()
