"""Message traces through the queen-mq 2.6.0 client: a consumer's
message.trace() records events that the admin reads back by message, by
trace name, and in the list of names."""

import uuid

import httpx


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_consumer_traces_read_back_by_message_and_by_name(client):
    q = name("traced")
    trace_name = name("order-flow")
    await client.queue(q).push([{"data": {"order": 1}}])
    got = []

    async def handler(message):
        got.append(message)
        first = await message["trace"]({"traceName": trace_name, "data": {"step": "validated"}})
        second = await message["trace"]({"traceName": [trace_name, "billing"], "eventType": "step", "data": {"step": "charged"}})
        assert first["success"] is True and second["success"] is True
        bad = await message["trace"]({"no": "data"})
        assert bad["success"] is False

    await client.queue(q).batch(1).limit(1).wait(False).each().consume(handler)
    assert len(got) == 1
    m = got[0]

    by_message = await client.admin.get_traces_for_message(m["partitionId"], m["transactionId"])
    assert [t["data"]["step"] for t in by_message["traces"]] == ["validated", "charged"]
    assert by_message["traces"][1]["eventType"] == "step"
    assert by_message["traces"][0]["consumerGroup"] == "__QUEUE_MODE__"

    by_name = await client.admin.get_traces_by_name(trace_name)
    assert by_name["total"] == 2
    assert [t["data"]["step"] for t in by_name["traces"]] == ["charged", "validated"], "newest first"
    assert (await client.admin.get_traces_by_name(trace_name, limit=1))["traces"][0]["data"]["step"] == "charged"

    names = await client.admin.get_trace_names(search=trace_name)
    assert names["names"] == [{"traceName": trace_name, "count": 2, "lastSeen": by_name["traces"][0]["createdAt"]}]


async def test_internal_kv_namespaces_are_refused(node):
    async with httpx.AsyncClient(base_url=node.url) as http:
        for ns in ("queen-traces", "queen-kafka", "queen-ephemeral"):
            r = await http.post("/api/v1/kv", json={"operations": [{"op": "put", "ns": ns, "key": "k", "value": 1}]})
            assert r.status_code == 400 and r.json()["reason"] == "kv_reserved_namespace", r.text
