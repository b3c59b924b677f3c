"""The KV store through the queen-mq client: get, getMany, getPrefix (and
paging), put with versions, putIfAbsent and once, delete, incr with bounds,
check, TTL, required preconditions, and the operators' probe route."""

import asyncio
import uuid

import httpx


def ns() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


async def test_put_get_versions_and_expect(client):
    n = ns()
    put = await client.kv.put(n, "a", {"x": 1}, forever=True)
    assert put["applied"] is True and put["version"] > 0
    got = await client.kv.get(n, "a")
    assert got["found"] is True and got["value"] == {"x": 1} and got["version"] == put["version"]
    stale = await client.kv.put(n, "a", 2, forever=True, expect=put["version"] + 1000)
    assert stale["applied"] is False and stale["reason"] == "version" and stale["value"] == {"x": 1}
    fresh = await client.kv.put(n, "a", 2, forever=True, expect=put["version"])
    assert fresh["applied"] is True and fresh["version"] > put["version"]
    missing = await client.kv.get(n, "nope")
    assert missing["found"] is False


async def test_put_if_absent_once_and_delete(client):
    n = ns()
    assert (await client.kv.put_if_absent(n, "k", "first", forever=True))["applied"] is True
    lost = await client.kv.put_if_absent(n, "k", "second", forever=True)
    assert lost["applied"] is False and lost["reason"] == "exists" and lost["value"] == "first"
    assert await client.kv.once(n, "job-1", ttl_seconds=60) is True
    assert await client.kv.once(n, "job-1", ttl_seconds=60) is False
    gone = await client.kv.delete(n, "k")
    assert gone["applied"] is True
    again = await client.kv.delete(n, "k")
    assert again["applied"] is False and again["reason"] == "absent"


async def test_incr_counts_exactly_and_respects_bounds(client):
    n = ns()
    results = await asyncio.gather(*[client.kv.incr(n, "c", forever=True) for _ in range(50)])
    assert all(r["applied"] for r in results)
    assert sorted(r["value"] for r in results) == list(range(1, 51))
    capped = await client.kv.incr(n, "c", delta=10, max=55, forever=True)
    assert capped["applied"] is False and capped["reason"] == "limit" and capped["value"] == 50
    await client.kv.put(n, "s", "text", forever=True)
    typed = await client.kv.incr(n, "s", forever=True)
    assert typed["applied"] is False and typed["reason"] == "type"


async def test_get_many_get_prefix_and_paging(client):
    n = ns()
    for i in range(7):
        await client.kv.put(n, f"user/{i}", i, forever=True)
    await client.kv.put(n, "other", 0, forever=True)
    many = await client.kv.get_many(n, ["user/1", "user/5", "user/99"])
    assert [r["key"] for r in many["rows"]] == ["user/1", "user/5"] and many["missing"] == ["user/99"]
    page = await client.kv.get_prefix(n, "user/", limit=3)
    assert [r["key"] for r in page["rows"]] == ["user/0", "user/1", "user/2"]
    assert page["truncated"] is True and page["nextAfter"] == "user/2"
    rows = await client.kv.list_all(n, "user/", limit=3)
    assert [r["value"] for r in rows] == list(range(7))


async def test_ttl_expires(client):
    n = ns()
    await client.kv.put(n, "short", "v", ttl_seconds=1)
    assert (await client.kv.get(n, "short"))["found"] is True
    await asyncio.sleep(1.2)
    assert (await client.kv.get(n, "short"))["found"] is False
    assert (await client.kv.put_if_absent(n, "short", "again", forever=True))["applied"] is True


async def test_check_and_a_required_precondition_aborts_the_call(client):
    n = ns()
    v = (await client.kv.put(n, "lock", "me", forever=True))["version"]
    assert (await client.kv.check(n, "lock", expect=v))["applied"] is True
    assert (await client.kv.check(n, "lock", expect=v + 1))["reason"] == "version"
    from queen.kv import ops

    answer = await client.kv.batch([ops.put(n, "side-effect", 1, forever=True), ops.check(n, "lock", expect=v + 1, required=True)])
    assert answer == []
    assert (await client.kv.get(n, "side-effect"))["found"] is False


async def test_the_operators_probe_route(node):
    async with httpx.AsyncClient(base_url=node.url) as http:
        r = await http.put("/api/v1/kv/ops/probe", json={"value": "2026-11-30T00:00:00Z", "ttlSeconds": 60})
        body = r.json()
        assert r.status_code == 200 and body["applied"] is True and body["key"] == "probe" and body["op"] == "put"
        r = await http.get("/api/v1/kv/ops/probe")
        assert r.json()["value"] == "2026-11-30T00:00:00Z"
        r = await http.post("/api/v1/kv", json={"operations": [{"op": "get", "ns": "Bad NS", "key": "k"}]})
        assert r.status_code == 400 and r.json()["code"] == "kv_bad_request" and r.json()["reason"] == "kv_bad_namespace"
        r = await http.post("/api/v1/kv", json={"operations": [{"op": "put", "ns": "ok", "key": "k", "value": 1}]})
        assert r.json()["reason"] == "kv_expiry_not_specified"
