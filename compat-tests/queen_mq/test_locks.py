"""Locks and semaphores through the queen-mq client, with fencing tokens and
a transaction guarded by a lock."""

import uuid

import pytest


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_lock_has_one_holder_and_tokens_increase(client):
    n = name("lock")
    a = client.lock(n, ttl_seconds=30, owner="a")
    b = client.lock(n, ttl_seconds=30, owner="b")
    assert await a.acquire() is True
    first = a.token
    assert await b.acquire() is False
    status = await client.locks.get(n)
    assert status["held"] is True and status["holders"][0]["owner"] == "a"
    assert await a.renew() is True and a.token > first
    assert await a.release() is True
    assert await b.acquire() is True and b.token > first
    stale = await client.locks.release(n, token=first)
    assert stale["released"] is False and stale["reason"] == "lost"
    await b.release()


async def test_a_semaphore_grants_its_limit(client):
    n = name("sem")
    holders = [client.semaphore(n, 2, ttl_seconds=30, owner=f"o{i}") for i in range(3)]
    granted = [await h.acquire() for h in holders]
    assert granted == [True, True, False]
    assert {holders[0].slot, holders[1].slot} == {0, 1}
    await holders[0].release()
    assert await holders[2].acquire() is True


async def test_a_guarded_transaction_commits_only_while_the_lock_is_held(client):
    n, q = name("guard"), name("q")
    lock = client.lock(n, ttl_seconds=30, owner="worker")
    assert await lock.acquire()
    ok = await client.transaction().guard(lock).queue(q).push([{"data": 1}]).commit()
    assert ok["success"] is True
    guard = lock.guard()
    await lock.release()
    raw = await client.locks.acquire(n, ttl_seconds=30, owner="thief")
    assert raw["acquired"] is True
    answer = await client._http_client.post("/api/v1/transaction", {
        "operations": [{"type": "push", "items": [{"queue": q, "payload": 2}]}],
        "requiredLeases": [],
        "kv": [guard],
    })
    assert answer["success"] is False and answer["reason"] == "kv_precondition"
    assert answer["value"]["owner"] == "thief"
    assert len(await client.queue(q).batch(10).wait(False).pop()) == 1
