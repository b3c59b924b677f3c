"""Consumer-group administration through the queen-mq client: list,
describe, lagging, seek, delete, re-subscribe."""

import uuid
from datetime import datetime, timedelta, timezone


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_describe_list_and_lag(client):
    q, g = name("adm"), name("grp")
    await client.queue(q).push([{"data": i} for i in range(4)])
    msgs = await client.queue(q).group(g).batch(1).wait(False).pop()
    assert (await client.ack(msgs, True, {"group": g}))["success"]
    described = await client.admin.get_consumer_group(g)
    part = described["queues"][0]["partitions"][0]
    assert described["queues"][0]["queueName"] == q
    assert (part["committedOffset"], part["highWatermark"], part["lag"]) == (1, 4, 3)
    groups = await client.admin.list_consumer_groups()
    assert g in [x["name"] for x in groups]
    lagging = await client.admin.get_lagging_consumers(0)
    assert any(x["consumerGroup"] == g and x["queueName"] == q and x["lag"] == 3 for x in lagging)


async def test_seek_to_end_and_to_a_time(client):
    q, g = name("seek"), name("grp")
    await client.queue(q).push([{"data": "old"}])
    middle = datetime.now(timezone.utc)
    await client.queue(q).push([{"data": "new"}])
    await client.admin.seek_consumer_group(g, q, {"toEnd": True})
    assert await client.queue(q).group(g).batch(10).wait(False).pop() == []
    await client.admin.seek_consumer_group(g, q, {"timestamp": middle.isoformat()})
    msgs = await client.queue(q).group(g).batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == ["new"]


async def test_delete_group_starts_it_over(client):
    q, g = name("del"), name("grp")
    await client.queue(q).push([{"data": 1}])
    msgs = await client.queue(q).group(g).batch(10).wait(False).pop()
    assert (await client.ack(msgs, True, {"group": g}))["success"]
    answer = await client.admin.delete_consumer_group_for_queue(g, q)
    assert answer["success"] is True and answer["deletedPartitions"] == 1
    again = await client.queue(q).group(g).batch(10).wait(False).pop()
    assert [m["data"] for m in again] == [1]
    assert (await client.delete_consumer_group(g))["success"] is True


async def test_resubscribe_from_a_time(client):
    q, g = name("resub"), name("grp")
    await client.queue(q).push([{"data": "a"}])
    msgs = await client.queue(q).group(g).batch(10).wait(False).pop()
    assert (await client.ack(msgs, True, {"group": g}))["success"]
    past = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat()
    await client.update_consumer_group_timestamp(g, past)
    again = await client.queue(q).group(g).batch(10).wait(False).pop()
    assert [m["data"] for m in again] == ["a"]
