"""Timers through the queen-mq client: schedule, peek, list, reschedule,
cancel; a timer fires once into its queue, not before its delay, and never
after a cancel that reported removing it."""

import asyncio
import time
import uuid


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_timer_fires_once_not_before_its_delay(client):
    q = name("tq")
    started = time.monotonic()
    r = await client.timers.schedule(q, "order:1:expire", {"orderId": 1}, delay_ms=700, txn="expire-1")
    assert r["ok"] is True and r["status"] == "scheduled" and r["deliverAt"]
    peek = await client.timers.peek(q, "order:1:expire")
    assert peek["found"] is True and peek["txn"] == "expire-1"
    assert await client.queue(q).batch(5).wait(False).pop() == []
    msgs = await client.queue(q).batch(5).wait(True).timeout_millis(5000).pop()
    assert time.monotonic() - started >= 0.7
    assert [m["data"] for m in msgs] == [{"orderId": 1}]
    assert msgs[0]["transactionId"] == "expire-1"
    assert (await client.timers.peek(q, "order:1:expire"))["found"] is False
    assert (await client.ack(msgs, True))["success"]
    await asyncio.sleep(0.3)
    assert await client.queue(q).batch(5).wait(False).pop() == []


async def test_cancel_wins_and_reschedule_replaces(client):
    q = name("tq")
    await client.timers.schedule(q, "a", "x", delay_ms=300)
    cancelled = await client.timers.cancel(q, "a")
    assert cancelled["ok"] is True and cancelled["status"] == "cancelled"
    again = await client.timers.cancel(q, "a")
    assert again["ok"] is False and again["status"] == "absent"
    first = await client.timers.schedule(q, "b", "y", delay_ms=60_000)
    second = await client.timers.reschedule(q, "b", "y2", delay_ms=60_000)
    assert first["status"] == "scheduled" and second["status"] == "rescheduled"
    listed = await client.timers.list(q)
    assert [r["timerKey"] for r in listed["rows"]] == ["b"]
    await asyncio.sleep(0.6)
    assert await client.queue(q).batch(5).wait(False).pop() == []
