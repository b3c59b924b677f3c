"""Conflated pops through the queen-mq 2.6.0 client: a conflating group gets
each partition's newest message and the rest is retired; the policy is fixed
when the group registers, and the broker echoes it."""

import uuid

import httpx
import pytest


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_conflating_group_gets_only_the_newest_message_per_partition(client):
    q = name("latest")
    await client.queue(q).partition("entity-1").push([{"data": {"v": i}} for i in range(5)])
    await client.queue(q).partition("entity-2").push([{"data": {"v": 10}}, {"data": {"v": 11}}])
    msgs = await client.queue(q).group("recompute").conflation().batch(10).partitions(5).wait(False).pop()
    assert sorted((m["partition"], m["data"]["v"], m["offset"]) for m in msgs) == [("entity-1", 4, 4), ("entity-2", 11, 1)]
    assert (await client.ack(msgs, True, {"group": "recompute"}))["success"]
    # Nothing behind the newest comes back; an empty conflating pop still says it conflates.
    assert await client.queue(q).group("recompute").conflation().batch(10).wait(False).pop() == []
    await client.queue(q).partition("entity-1").push([{"data": {"v": 5}}, {"data": {"v": 6}}])
    again = await client.queue(q).group("recompute").conflation().batch(10).wait(False).pop()
    assert [(m["data"]["v"], m["offset"]) for m in again] == [(6, 6)]
    # Another group of the same queue still sees every message.
    every = await client.queue(q).group("audit").batch(20).partitions(5).wait(False).pop()
    assert len(every) == 9


async def test_conflation_needs_a_group_and_no_autoack(node):
    async with httpx.AsyncClient(base_url=node.url) as http:
        r = await http.get("/api/v1/pop/queue/x", params={"conflation": "true", "wait": "false"})
        assert r.status_code == 400 and r.json()["code"] == "conflation_requires_group"
        r = await http.get(
            "/api/v1/pop/queue/x", params={"conflation": "true", "consumerGroup": "g", "autoAck": "true", "wait": "false"}
        )
        assert r.status_code == 400 and r.json()["code"] == "conflation_with_commit_on_delivery"
