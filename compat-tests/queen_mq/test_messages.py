"""Message browsing and retry through the queen-mq 2.6.0 client's admin: list
a queue's messages with their status, look one up, send a dead letter back
to be delivered again, and the refused delete."""

import uuid

import httpx
import pytest


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_dead_letter_retried_is_delivered_again_after_later_messages_were_done(client):
    q = name("retry")
    await client.queue(q).config({"retryLimit": 0, "dlqAfterMaxRetries": True}).create()
    await client.queue(q).push([{"data": "poison", "transactionId": "bad-1"}, {"data": "fine"}])
    first = await client.queue(q).batch(1).wait(False).pop()
    assert (await client.ack(first[0], False, {"error": "boom"}))["success"]
    rest = await client.queue(q).batch(5).wait(False).pop()
    assert [m["data"] for m in rest] == ["fine"]
    assert (await client.ack(rest, True))["success"]

    listed = await client.admin.list_messages(queue=q)
    assert [(m["data"], m["consumerGroups"][0]["status"]) for m in listed["messages"]] == [
        ("poison", "dead_letter"),
        ("fine", "completed"),
    ]
    dead = await client.admin.list_messages(queue=q, status="dead_letter")
    assert [m["transactionId"] for m in dead["messages"]] == ["bad-1"]

    pid = first[0]["partitionId"]
    one = await client.admin.get_message(pid, "bad-1")
    assert one["offset"] == 0 and one["data"] == "poison"

    answer = await client.admin.retry_message(pid, "bad-1")
    assert answer["retried"] == 1
    assert (await client.queue(q).dlq().limit(10).get())["total"] == 0
    again = await client.queue(q).batch(5).wait(False).pop()
    assert [(m["data"], m["offset"]) for m in again] == [("poison", 0)], "only the retried message, not the done one"
    assert (await client.ack(again, True))["success"]
    assert await client.queue(q).batch(5).wait(False).pop() == []
    after = await client.admin.get_message(pid, "bad-1")
    assert after["consumerGroups"][0]["status"] == "completed"

    with pytest.raises(httpx.HTTPStatusError) as not_dead:
        await client.admin.retry_message(pid, "bad-1")
    assert not_dead.value.response.status_code == 409
    with pytest.raises(httpx.HTTPStatusError) as missing:
        await client.admin.get_message(pid, "no-such-message")
    assert missing.value.response.status_code == 404
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await client.admin.delete_message(pid, "bad-1")
    assert refused.value.response.status_code == 405


async def test_the_dlq_filters_by_when_messages_were_moved(client):
    import datetime

    q = name("dlqtime")
    await client.queue(q).config({"retryLimit": 0, "dlqAfterMaxRetries": True}).create()
    await client.queue(q).push([{"data": "poison"}])
    first = await client.queue(q).batch(1).wait(False).pop()
    assert (await client.ack(first[0], False, {"error": "boom"}))["success"]
    now = datetime.datetime.now(datetime.timezone.utc)
    earlier = (now - datetime.timedelta(hours=1)).isoformat()
    later = (now + datetime.timedelta(hours=1)).isoformat()
    assert (await client.queue(q).dlq().limit(10).get())["total"] == 1
    assert (await client.queue(q).dlq().from_(earlier).to(later).limit(10).get())["total"] == 1
    assert (await client.queue(q).dlq().to(earlier).limit(10).get())["total"] == 0
