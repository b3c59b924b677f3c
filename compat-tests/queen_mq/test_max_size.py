"""The queue option maxSize: a push that would leave more than maxSize
messages unfinished in queue mode is refused whole (409 queue_full), a retry
of stored transactionIds still answers duplicate, finished messages make room,
and a transaction that would overfill rolls back."""

import time
import uuid

import httpx
import pytest


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_max_size_refuses_the_push_that_overfills_and_frees_room_on_ack(node, client):
    from queen import Queen

    # The client as it ships: a 429 it would retry with backoff for minutes
    # (its retry_429 policy); a full queue is a 409 it raises at once.
    impatient = Queen(node.url)
    q = name("bounded")
    answer = await client.queue(q).config({"maxSize": 3}).create()
    assert answer["options"]["maxSize"] == 3
    await client.queue(q).push([{"data": 1, "transactionId": "a"}, {"data": 2, "transactionId": "b"}])
    asked = time.monotonic()
    with pytest.raises(httpx.HTTPStatusError) as full:
        await impatient.queue(q).push([{"data": 3}, {"data": 4}])
    took = time.monotonic() - asked
    await impatient.close()
    assert full.value.response.status_code == 409 and full.value.response.json()["code"] == "queue_full"
    assert took < 2, f"the refusal took {took:.1f} s: the client retried it"

    # Nothing of the refused push was stored; a retry of stored ids is no new message.
    again = await client.queue(q).push([{"data": 1, "transactionId": "a"}, {"data": 3, "transactionId": "c"}])
    assert [r["status"] for r in again] == ["duplicate", "queued"]
    msgs = await client.queue(q).batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == [1, 2, 3]
    assert (await client.ack(msgs[:2], True))["success"]
    await client.queue(q).push([{"data": 4}, {"data": 5}])

    with pytest.raises(Exception, match="rolled back"):
        await client.transaction().queue(q).push([{"data": 6}, {"data": 7}]).commit()
