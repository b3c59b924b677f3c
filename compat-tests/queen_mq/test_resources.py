"""Operator reads through the queen-mq admin client: overview, namespaces,
tasks, queues, one queue, its depth for a group, partitions."""

import uuid


async def test_resources_describe_what_the_node_holds(client):
    q = f"res-{uuid.uuid4().hex[:8]}"
    await client.queue(q).namespace("billing").task("invoices").config({"leaseTime": 60}).create()
    await client.queue(q).partition("a").push([{"data": 1}, {"data": 2}])
    await client.queue(q).partition("b").push([{"data": 3}])
    overview = await client.admin.get_overview()
    assert overview["queues"] >= 1 and overview["messages"] >= 3
    assert any(r["namespace"] == "billing" for r in (await client.admin.get_namespaces())["namespaces"])
    assert any(r["task"] == "invoices" for r in (await client.admin.get_tasks())["tasks"])
    listed = await client.admin.list_queues(namespace="billing", search=q)
    assert [r["name"] for r in listed["queues"]] == [q] and listed["queues"][0]["messages"] == 3
    detail = await client.admin.get_queue(q)
    assert [p["name"] for p in detail["partitions"]] == ["a", "b"] and detail["options"]["leaseTime"] == 60
    msgs = await client.queue(q).partition("a").batch(1).wait(False).pop()
    assert (await client.ack(msgs, True))["success"]
    depth = await client.admin.get_queue_depth(q)
    assert depth["depth"] == 2
    parts = await client.admin.get_partitions(queue=q)
    assert parts["total"] == 2
