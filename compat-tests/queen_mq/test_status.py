"""Status and analytics through the queen-mq 2.6.0 client's admin: the node's
status, per-queue statistics and detail, counters since boot, and the
process's own metrics."""

import uuid


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_status_queue_stats_and_detail_follow_what_happens(client):
    q = name("stats")
    await client.queue(q).partition("a").push([{"data": i} for i in range(3)])
    await client.queue(q).partition("b").push([{"data": 9}])
    msgs = await client.queue(q).group("billing").batch(10).wait(False).pop()
    await client.ack(msgs[:1], True, {"group": "billing"})

    status = await client.admin.get_status()
    assert status["status"] == "healthy" and status["queues"] >= 1 and status["uptimeSeconds"] >= 0

    stats = await client.admin.get_queue_stats(search=q)
    assert stats["total"] == 1
    row = stats["queues"][0]
    assert (row["name"], row["partitions"], row["messages"], row["pending"]) == (q, 2, 4, 4)
    assert row["consumerGroups"] == 1

    detail = await client.admin.get_queue_detail(q)
    assert [p["name"] for p in detail["partitions"]] == ["a", "b"]
    billing = next(g for g in detail["consumerGroups"] if g["consumerGroup"] == "billing")
    assert billing["pending"] == 4 - 1, "one acknowledged of four"
    assert billing["partitions"] == 1, "a cursor on the partition its pop claimed"


async def test_analytics_and_process_metrics(client):
    await client.queue(name("count")).push([{"data": 1}])
    analytics = await client.admin.get_analytics()
    assert analytics["totals"]["messagesAppended"] >= 1 and analytics["perSecond"]["messagesAppended"] > 0
    system = await client.admin.get_system_metrics()
    assert system["rssBytes"] > 0 and system["threads"] >= 1 and system["openFiles"] >= 1
    workers = await client.admin.get_worker_metrics()
    assert workers["workers"] >= 1
