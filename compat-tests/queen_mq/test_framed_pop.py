"""The framed pop answer (QPF1) through the queen-mq 2.6.0 client with
framed_pop: the same messages as the JSON answer, and acks that name the
framed partition id work."""

import uuid


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_framed_pop_delivers_what_json_would_and_acks_work(node, client):
    from queen import Queen

    q = name("framed")
    trace = str(uuid.uuid4())
    await client.queue(q).partition("a").push([{"data": {"n": 1}, "transactionId": "t1", "traceId": trace}, {"data": "two"}])
    await client.queue(q).partition("b").push([{"data": [3]}])
    framed = Queen(node.url, framed_pop=True)
    try:
        msgs = await framed.queue(q).batch(10).partitions(2).wait(False).pop()
        assert sorted((m["partition"], m["offset"]) for m in msgs) == [("a", 0), ("a", 1), ("b", 0)]
        by_txn = {m["transactionId"]: m for m in msgs}
        assert by_txn["t1"]["data"] == {"n": 1} and by_txn["t1"]["traceId"] == trace
        assert [m["data"] for m in msgs if m["partition"] == "a"] == [{"n": 1}, "two"]
        assert all(m["leaseId"] and m["consumerGroup"] == "__QUEUE_MODE__" for m in msgs)
        result = await framed.ack(msgs, True)
        assert result["success"] is True, result
        assert await framed.queue(q).batch(10).wait(False).pop() == []
    finally:
        await framed.close()
