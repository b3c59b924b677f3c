"""The queen-mq 2.6.0 client against a real node: queues, push, pop in every
mode, ack, retries to the dead-letter queue, lease extension, reads."""

import asyncio
import time
import uuid

import httpx


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_configure_echoes_every_option_in_camel_case(client):
    q = name("cfg")
    answer = await client.queue(q).config({"lease_time": 7, "retryLimit": 2, "dlqAfterMaxRetries": True}).create()
    assert answer["configured"] is True
    opts = answer["options"]
    assert opts["leaseTime"] == 7 and opts["retryLimit"] == 2 and opts["dlqAfterMaxRetries"] is True
    for default in ("priority", "delayedProcessing", "windowBuffer", "maxSize", "retentionSeconds", "encryptionEnabled"):
        assert default in opts


async def test_push_then_duplicate_answers_the_original_offset(client):
    q = name("dup")
    first = await client.queue(q).push([{"data": {"n": 1}, "transactionId": "same"}, {"data": {"n": 2}}])
    assert [r["status"] for r in first] == ["queued", "queued"]
    again = await client.queue(q).push([{"data": {"n": 1}, "transactionId": "same"}])
    assert again[0]["status"] == "duplicate"
    assert again[0]["offset"] == first[0]["offset"]


async def test_pop_ack_and_no_redelivery_after_ack(client):
    q = name("pop")
    await client.queue(q).create()
    await client.queue(q).push([{"data": {"i": i}} for i in range(5)])
    msgs = await client.queue(q).batch(5).wait(False).pop()
    assert [m["data"]["i"] for m in msgs] == list(range(5))
    assert all(m["partitionId"] and m["leaseId"] for m in msgs)
    result = await client.ack(msgs, True)
    assert result["success"] is True, result
    assert await client.queue(q).batch(5).wait(False).pop() == []
    # The cursor is past it: a second completion changes nothing and says so,
    # and a failure can no longer be honoured.
    again = await client.ack(msgs[0], True)
    assert again["success"] is True and again["noop"] is True, again
    late = await client.ack(msgs[0], False)
    assert late["success"] is False and late["error"] == "already_committed", late
    assert await client.queue(q).batch(5).wait(False).pop() == []


async def test_pop_from_a_named_partition_only(client):
    q = name("part")
    await client.queue(q).partition("a").push([{"data": "in-a"}])
    await client.queue(q).partition("b").push([{"data": "in-b"}])
    msgs = await client.queue(q).partition("b").batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == ["in-b"]
    assert msgs[0]["partition"] == "b"


async def test_long_poll_wakes_on_push(client):
    q = name("poll")
    await client.queue(q).create()

    async def push_later():
        await asyncio.sleep(0.5)
        await client.queue(q).push([{"data": "late"}])

    started = time.monotonic()
    task = asyncio.create_task(push_later())
    msgs = await client.queue(q).batch(1).wait(True).timeout_millis(10_000).pop()
    await task
    assert [m["data"] for m in msgs] == ["late"]
    assert time.monotonic() - started < 5


async def test_commit_on_delivery_needs_no_ack(client):
    q = name("auto")
    await client.queue(q).push([{"data": 1}, {"data": 2}])
    msgs = await client.queue(q).batch(10).wait(False).commit_on_delivery().pop()
    assert len(msgs) == 2
    assert await client.queue(q).batch(10).wait(False).pop() == []


async def test_each_consumer_group_sees_every_message_and_queue_mode_sees_each_once(client):
    q = name("groups")
    await client.queue(q).push([{"data": i} for i in range(3)])
    for group in ("billing", "audit"):
        msgs = await client.queue(q).group(group).batch(10).wait(False).pop()
        assert [m["data"] for m in msgs] == [0, 1, 2]
        assert (await client.ack(msgs, True, {"group": group}))["success"]
    msgs = await client.queue(q).batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == [0, 1, 2]
    assert (await client.ack(msgs, True))["success"]
    assert await client.queue(q).group("billing").batch(10).wait(False).pop() == []


async def test_subscription_new_skips_history(client):
    q = name("new")
    await client.queue(q).push([{"data": "old"}])
    assert await client.queue(q).group("fresh").subscription_mode("new").batch(10).wait(False).pop() == []
    await asyncio.sleep(0.01)
    await client.queue(q).push([{"data": "new"}])
    msgs = await client.queue(q).group("fresh").subscription_mode("new").batch(10).wait(False).pop()
    assert [m["data"] for m in msgs] == ["new"]


async def test_failures_retry_then_go_to_the_dead_letter_queue(client):
    q = name("dlq")
    await client.queue(q).config({"retryLimit": 1, "dlqAfterMaxRetries": True}).create()
    await client.queue(q).push([{"data": "poison"}])
    first = await client.queue(q).batch(1).wait(False).pop()
    assert first[0]["retryCount"] == 0
    assert (await client.ack(first[0], False, {"error": "boom 1"}))["success"]
    second = await client.queue(q).batch(1).wait(False).pop()
    assert second[0]["transactionId"] == first[0]["transactionId"]
    assert second[0]["retryCount"] == 1
    assert (await client.ack(second[0], False, {"error": "boom 2"}))["success"]
    assert await client.queue(q).batch(1).wait(False).pop() == []
    dlq = await client.queue(q).dlq().limit(10).get()
    assert dlq["total"] == 1
    assert dlq["messages"][0]["errorMessage"] == "boom 2"
    assert dlq["messages"][0]["retryCount"] == 2
    assert dlq["messages"][0]["data"] == "poison"


async def test_lease_extension_and_an_expired_lease_refuses_the_ack(client):
    q = name("lease")
    await client.queue(q).config({"leaseTime": 1}).create()
    await client.queue(q).push([{"data": "x"}])
    msgs = await client.queue(q).batch(1).wait(False).pop()
    renewed = await client.renew(msgs[0])
    assert renewed["success"] is True and renewed["newExpiresAt"]
    await asyncio.sleep(1.3)
    assert (await client.ack(msgs[0], True))["success"] is False
    again = await client.queue(q).batch(1).wait(False).pop()
    assert again[0]["transactionId"] == msgs[0]["transactionId"]
    assert (await client.ack(again[0], True))["success"] is True
    gone = await client.renew(again[0])
    assert gone["success"] is False


async def test_consume_loop_processes_and_acks_everything(client):
    q = name("consume")
    await client.queue(q).push([{"data": i} for i in range(20)])
    seen = []

    async def handler(msgs):
        for m in msgs if isinstance(msgs, list) else [msgs]:
            seen.append(m["data"])

    await client.queue(q).batch(5).limit(20).wait(False).consume(handler)
    assert sorted(seen) == list(range(20))
    assert await client.queue(q).batch(5).wait(False).pop() == []


async def test_fetch_reads_by_offset(client):
    q = name("fetch")
    await client.queue(q).partition("p").push([{"data": i, "transactionId": f"t{i}"} for i in range(4)])
    read = await client.queue(q).fetch(["p", "nobody"], offsets={"p": 1})
    assert [r["offset"] for r in read["p"]["records"]] == [1, 2, 3]
    assert [r["payload"] for r in read["p"]["records"]] == [1, 2, 3]
    assert read["p"]["highWatermark"] == 4
    assert read["nobody"]["records"] == []


async def test_delete_queue(client, node):
    q = name("gone")
    await client.queue(q).push([{"data": 1}])
    await client.queue(q).delete()
    assert await client.queue(q).batch(1).wait(False).pop() == []


async def test_errors_are_json_with_a_code(node):
    async with httpx.AsyncClient(base_url=node.url) as http:
        r = await http.post("/api/v1/push", content=b"{nope", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["code"] == "invalid_json"
        r = await http.get("/api/v1/pop/queue/x?batch=abc")
        assert r.status_code == 400 and r.json()["code"] == "invalid_field"
        r = await http.get("/api/v1/nope")
        assert r.status_code == 404 and r.json()["code"] == "unknown_route"


async def test_delayed_processing_holds_messages_back(client):
    q = name("delay")
    await client.queue(q).config({"delayedProcessing": 1}).create()
    await client.queue(q).push([{"data": "later"}])
    assert await client.queue(q).batch(1).wait(False).pop() == []
    await asyncio.sleep(1.1)
    assert [m["data"] for m in await client.queue(q).batch(1).wait(False).pop()] == ["later"]


async def test_window_buffer_waits_for_a_quiet_partition(client):
    q = name("window")
    await client.queue(q).config({"windowBuffer": 1}).create()
    await client.queue(q).push([{"data": 1}])
    await asyncio.sleep(0.5)
    await client.queue(q).push([{"data": 2}])
    assert await client.queue(q).batch(10).wait(False).pop() == []
    await asyncio.sleep(1.1)
    assert [m["data"] for m in await client.queue(q).batch(10).wait(False).pop()] == [1, 2]


async def test_a_message_whose_leases_keep_expiring_goes_to_the_dlq(client):
    q = name("poison")
    await client.queue(q).config({"leaseTime": 1, "retryLimit": 1}).create()
    await client.queue(q).push([{"data": "crashes its consumer"}])
    for attempt in (1, 2):
        msgs = await client.queue(q).batch(1).wait(False).pop()
        assert msgs[0]["deliveryAttempt"] == attempt
        await asyncio.sleep(1.2)
    assert await client.queue(q).batch(1).wait(False).pop() == []
    dlq = await client.queue(q).dlq().get()
    assert dlq["total"] == 1 and "lease expired" in dlq["messages"][0]["errorMessage"]
    assert dlq["messages"][0]["retryCount"] == 2


async def test_binary_push_bodies(node):
    from queen import Queen

    for compression in (False, True):
        q = name("binary")
        client = Queen(node.url, binary_push=True, push_compression=compression)
        try:
            first = await client.queue(q).partition("p").push([{"data": {"i": 1}, "transactionId": "b-1"}, {"data": [2]}])
            assert [r["status"] for r in first] == ["queued", "queued"]
            again = await client.queue(q).partition("p").push([{"data": {"i": 1}, "transactionId": "b-1"}])
            assert again[0]["status"] == "duplicate"
            msgs = await client.queue(q).partition("p").batch(10).wait(False).pop()
            assert [m["data"] for m in msgs] == [{"i": 1}, [2]]
            assert msgs[0]["transactionId"] == "b-1"
        finally:
            await client.close()
    async with httpx.AsyncClient(base_url=node.url) as http:
        r = await http.post("/api/v1/push", content=b"QPB1\x00\xff\xff", headers={"content-type": "application/x-queen-push"})
        assert r.status_code == 400 and r.json()["code"] == "invalid_binary_body"


async def test_changed_since_lists_written_partitions(client):
    q = name("changed")
    await client.queue(q).partition("a").push([{"data": 1}])
    first = await client.queue(q).changed_since()
    assert [p["name"] for p in first["partitions"]] == ["a"] and first["safeTime"]
    await client.queue(q).partition("b").push([{"data": 2}])
    later = await client.queue(q).changed_since(first["safeTime"])
    assert [p["name"] for p in later["partitions"]] == ["b"]
    assert later["partitions"][0]["lastOffset"] == 0
    assert (await client.queue(name("none")).changed_since())["partitions"] == []


async def test_an_ack_under_a_foreign_lease_is_refused(client):
    q = name("foreign")
    await client.queue(q).push([{"data": 1}])
    msgs = await client.queue(q).batch(1).wait(False).pop()
    forged = dict(msgs[0], leaseId=str(uuid.uuid4()))
    refused = await client.ack(forged, True)
    assert refused["success"] is False and "lease" in refused["error"]
    assert (await client.ack(msgs[0], True))["success"] is True
