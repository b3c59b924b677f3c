"""The queue option priority: a pop by namespace takes from the queues of
higher priority first, whatever order they were created or pushed in."""

import uuid


async def test_a_pop_by_namespace_takes_from_higher_priority_queues_first(client):
    ns = f"prio-{uuid.uuid4().hex[:8]}"
    # Created low to high and named so that name order is the reverse of priority order.
    queues = {"a-low": 1, "b-mid": 5, "c-high": 9}
    for q, priority in queues.items():
        await client.queue(f"{ns}-{q}").namespace(ns).config({"priority": priority}).create()
    for q in queues:
        await client.queue(f"{ns}-{q}").push([{"data": {"from": q}}])

    order = []
    for _ in queues:
        msgs = await client.queue().namespace(ns).batch(1).wait(False).pop()
        assert len(msgs) == 1, msgs
        order.append(msgs[0]["data"]["from"])
        assert (await client.ack(msgs[0], True))["success"]
    assert order == ["c-high", "b-mid", "a-low"]
