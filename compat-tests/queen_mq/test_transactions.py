"""POST /api/v1/transaction through the queen-mq client: an ack, a push and
KV writes commit together; an expired lease, a lost required precondition or
a duplicate push rolls the whole bundle back."""

import asyncio
import uuid

import pytest


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_ack_push_and_kv_commit_together(client):
    src, dst, ns = name("src"), name("dst"), f"tx-{uuid.uuid4().hex[:8]}"
    await client.queue(src).push([{"data": {"order": 1}}])
    msgs = await client.queue(src).batch(1).wait(False).pop()
    result = await (
        client.transaction()
        .ack(msgs[0])
        .queue(dst).push([{"data": {"shipped": 1}}])
        .kv.incr(ns, "shipped", forever=True)
        .commit()
    )
    assert result["success"] is True, result
    types = [r["type"] for r in result["results"]]
    assert types == ["ack", "push", "kv"]
    assert [r["index"] for r in result["results"]] == [0, 1, 2]
    assert await client.queue(src).batch(1).wait(False).pop() == []
    assert [m["data"] for m in await client.queue(dst).batch(5).wait(False).pop()] == [{"shipped": 1}]
    assert (await client.kv.get(ns, "shipped"))["value"] == 1


async def test_an_expired_lease_commits_nothing(client):
    src, dst, ns = name("src"), name("dst"), f"tx-{uuid.uuid4().hex[:8]}"
    await client.queue(src).config({"leaseTime": 1}).create()
    await client.queue(src).push([{"data": "job"}])
    msgs = await client.queue(src).batch(1).wait(False).pop()
    await asyncio.sleep(1.3)
    with pytest.raises(Exception, match="rolled back"):
        await (
            client.transaction()
            .ack(msgs[0])
            .queue(dst).push([{"data": "must not exist"}])
            .kv.put(ns, "written", 1, forever=True)
            .commit()
        )
    assert await client.queue(dst).batch(5).wait(False).pop() == []
    assert (await client.kv.get(ns, "written"))["found"] is False
    again = await client.queue(src).batch(1).wait(False).pop()
    assert again[0]["transactionId"] == msgs[0]["transactionId"]


async def test_a_lost_required_precondition_rolls_back_and_is_returned(client):
    dst, ns = name("dst"), f"tx-{uuid.uuid4().hex[:8]}"
    await client.kv.put(ns, "gate", "closed", forever=True)
    result = await (
        client.transaction()
        .queue(dst).push([{"data": 1}])
        .kv.check(ns, "gate", expect=999_999_999, required=True)
        .commit()
    )
    assert not result and result["reason"] == "kv_precondition"
    assert result["failedIndex"] == 1 and result["kvReason"] == "version" and result["value"] == "closed"
    assert await client.queue(dst).batch(5).wait(False).pop() == []


async def test_once_makes_a_retried_step_write_nothing_twice(client):
    dst, ns = name("dst"), f"tx-{uuid.uuid4().hex[:8]}"
    first = await client.transaction().queue(dst).push([{"data": "x"}]).once(ns, "step-1", ttl_seconds=600).commit()
    assert first["success"] is True
    second = await client.transaction().queue(dst).push([{"data": "x"}]).once(ns, "step-1", ttl_seconds=600).commit()
    assert not second and second["reason"] == "kv_precondition"
    assert len(await client.queue(dst).batch(5).wait(False).pop()) == 1


async def test_a_timer_rides_in_a_transaction(client):
    q = name("ttx")
    tx = client.transaction()
    tx.timer(q).key("k").payload({"t": 1}).after_ms(200).schedule()
    result = await tx.queue(name("other")).push([{"data": 1}]).commit()
    assert result["success"] is True, result
    assert [r["type"] for r in result["results"]] == ["push", "timer"]
    msgs = await client.queue(q).batch(5).wait(True).timeout_millis(5000).pop()
    assert [m["data"] for m in msgs] == [{"t": 1}]


async def test_the_binary_transaction_body_commits_like_the_json_one(node, client):
    """With binary_push and push_compression the client sends QTB1: the acks
    and KV in a JSON head, the pushes as compressed frames."""
    from queen import Queen

    src, dst, ns = name("src"), name("dst"), f"tx-{uuid.uuid4().hex[:8]}"
    await client.queue(src).push([{"data": {"order": 1}}])
    msgs = await client.queue(src).batch(1).wait(False).pop()
    binary = Queen(node.url, binary_push=True, push_compression=True)
    try:
        result = await (
            binary.transaction()
            .queue(dst).push([{"data": {"shipped": 1}, "transactionId": "ship-1"}, {"data": {"shipped": 2}}])
            .ack(msgs[0])
            .kv.incr(ns, "shipped", forever=True)
            .commit()
        )
    finally:
        await binary.close()
    assert result["success"] is True, result
    # The client puts the results back in the order the operations were added.
    assert [r["type"] for r in result["results"]] == ["push", "push", "ack", "kv"]
    assert result["results"][0]["transactionId"] == "ship-1"
    assert await client.queue(src).batch(1).wait(False).pop() == []
    got = await client.queue(dst).batch(5).wait(False).pop()
    assert [m["data"] for m in got] == [{"shipped": 1}, {"shipped": 2}]
    assert (await client.kv.get(ns, "shipped"))["value"] == 1


async def test_a_counted_binary_transaction(node):
    import httpx
    from queen.http.push_binary import PushBatch, encode_transaction_frames

    q, ns = name("counted"), f"tx-{uuid.uuid4().hex[:8]}"
    head = b'{"kv": [{"op": "put", "ns": "' + ns.encode() + b'", "key": "k", "value": 1, "forever": true}]}'
    batch = PushBatch(q, "p", [b'{"n": 1}', b'{"n": 2}'], ["same", "other"])
    body = encode_transaction_frames(head, [batch], counts=True)
    async with httpx.AsyncClient(base_url=node.url) as http:
        headers = {"content-type": "application/x-queen-push"}
        first = (await http.post("/api/v1/transaction", content=body, headers=headers)).json()
        assert (first["success"], first["pushed"], first["duplicate"], first["acked"]) == (True, 2, 0, 0), first
        assert [r["type"] for r in first["results"]] == ["kv"]
        bad = await http.post("/api/v1/transaction", content=b"QTB1\x00\xff\xff\xff\xff", headers=headers)
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_binary_body"
