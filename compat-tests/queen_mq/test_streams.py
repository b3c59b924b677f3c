"""The streams SDK of queen-mq (`queen.streams`) against a node: the
scenarios of the public repository's streams/examples/ (a per-customer
windowed sum, threshold alerting, in-window dedup, a rate limiter), each
checking its sink, and a windowed run whose node is killed with kill -9 in
the middle: after the restart, state and sink hold every input exactly once.

The windows run on event time (each message carries its `ts`), so what a
window holds does not depend on when the test runs; a last message far
ahead closes the windows before it.
"""

import asyncio
import json
import time
import urllib.request
import uuid

import httpx
from queen import Queen, Stream, token_bucket_gate

from conftest import Node

# Event times start at a window boundary far from now, so windows are fixed.
T0 = 1_699_999_800_000


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def post(node, path, body):
    req = urllib.request.Request(
        node.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def state_of(node, query_id, partition_id):
    status, body = post(node, "/streams/v1/state/get", {"query_id": query_id, "partition_id": partition_id, "keys": []})
    assert status == 200, body
    return body["rows"]


async def drain(client, queue, want, timeout=20.0):
    """Pops and acks `queue` until `want` messages arrived (or the time is
    up), as the group "check"."""
    got = []
    deadline = time.time() + timeout
    group = "check"
    while len(got) < want and time.time() < deadline:
        msgs = await client.queue(queue).group(group).batch(100).wait(True).timeout_millis(300).pop()
        if msgs:
            got.extend(msgs)
            await client.ack(msgs, True, {"group": group})
    return got


async def settle(client, queue, have, quiet=1.0):
    """Pops whatever else arrives in `quiet` seconds, after `drain` (as
    its group): a duplicate would."""
    return await drain(client, queue, have + 1, timeout=quiet)


async def run(stream, query_id, node, **opts):
    opts.setdefault("batch_size", 50)
    opts.setdefault("max_wait_millis", 200)
    return await stream.run(query_id=query_id, url=node.url, **opts)


async def test_per_customer_windowed_sum(client, node):
    """Example 02: a tumbling sum (count, sum, avg, max) per customer."""
    src, sink = name("orders"), name("orders-totals")
    await client.queue(src).config({"leaseTime": 5, "retryLimit": 100}).create()
    amounts = {"alice": [10, 20, 30, 5], "bob": [7, 3], "carol": [100]}
    for customer, values in amounts.items():
        # Two windows of 10 s: the first two amounts in the first, the rest in
        # the second; a last message at +60 s closes both.
        items = [{"data": {"amount": v, "ts": T0 + (i // 2) * 10_000 + i}} for i, v in enumerate(values)]
        items.append({"data": {"amount": 0, "ts": T0 + 60_000}})
        await client.queue(src).partition(customer).push(items)
    stream = (
        Stream.from_(client.queue(src))
        .window_tumbling(seconds=10, event_time=lambda m: m["data"]["ts"])
        .aggregate({"count": lambda m: 1, "sum": lambda m: m["amount"], "avg": lambda m: m["amount"], "max": lambda m: m["amount"]})
        .map(lambda v, ctx: {"customer": ctx["partition"], "windowStart": ctx["windowStart"], "count": v["count"], "sum": v["sum"], "avg": v["avg"], "max": v["max"]})
        .to(client.queue(sink))
    )
    runner = await run(stream, name("sum"), node)
    try:
        want = {}
        for customer, values in amounts.items():
            for w in range(0, len(values), 2):
                vs = values[w : w + 2]
                want[(customer, T0 + (w // 2) * 10_000)] = (len(vs), sum(vs), sum(vs) / len(vs), max(vs))
        got = await drain(client, sink, len(want))
        got += await settle(client, sink, len(got))
    finally:
        await runner.stop()
    seen = {(m["data"]["customer"], m["data"]["windowStart"]): (m["data"]["count"], m["data"]["sum"], m["data"]["avg"], m["data"]["max"]) for m in got}
    assert len(got) == len(want), [m["data"] for m in got]
    assert seen == want


async def test_threshold_alerting(client, node):
    """Example 03: a windowed average per host, an alert when it is over 90."""
    src, alerts = name("metrics-cpu"), name("alerts-cpu")
    await client.queue(src).config({"leaseTime": 5, "retryLimit": 100}).create()
    samples = {
        # Window 0 averages 95 (alert), window 1 averages 50 (none).
        "host-a": [(0, 90), (1, 100), (30_000, 40), (30_001, 60)],
        # Never over 90 on average, though one sample is.
        "host-b": [(0, 99), (1, 10)],
    }
    for host, points in samples.items():
        items = [{"data": {"value": v, "ts": T0 + dt}} for dt, v in points]
        items.append({"data": {"value": 0, "ts": T0 + 120_000}})
        await client.queue(src).partition(host).push(items)
    stream = (
        Stream.from_(client.queue(src))
        .window_tumbling(seconds=30, event_time=lambda m: m["data"]["ts"])
        .reduce(lambda acc, m: {"sum": acc["sum"] + m["value"], "count": acc["count"] + 1}, {"sum": 0, "count": 0})
        .filter(lambda agg: agg["count"] > 0 and agg["sum"] / agg["count"] > 90)
        .map(lambda agg, ctx: {"host": ctx["partition"], "severity": "high", "avg": agg["sum"] / agg["count"], "windowStart": ctx["windowStart"]})
        .to(client.queue(alerts))
    )
    runner = await run(stream, name("alert"), node)
    try:
        got = await drain(client, alerts, 1)
        got += await settle(client, alerts, len(got), quiet=1.5)
    finally:
        await runner.stop()
    assert [m["data"] for m in got] == [{"host": "host-a", "severity": "high", "avg": 95, "windowStart": T0}]


async def test_in_window_dedup(client, node):
    """Example 04: one record per distinct eventId per window."""
    src, unique = name("webhooks-raw"), name("webhooks-unique")
    await client.queue(src).config({"leaseTime": 5, "retryLimit": 100}).create()
    events = [("e1", 0), ("e2", 1), ("e1", 2), ("e3", 3), ("e2", 4), ("e1", 300_000), ("e4", 300_001), ("e4", 300_002)]
    items = [{"data": {"eventId": e, "ts": T0 + dt}} for e, dt in events]
    items.append({"data": {"eventId": None, "ts": T0 + 900_000}})
    # Several pushes and a small batch: the window's state crosses cycles.
    for i in range(0, len(items), 3):
        await client.queue(src).partition("hooks").push(items[i : i + 3])
    stream = (
        Stream.from_(client.queue(src))
        .window_tumbling(seconds=300, event_time=lambda m: m["data"]["ts"])
        .reduce(lambda seen, m: seen + [m["eventId"]] if m.get("eventId") and m["eventId"] not in seen else seen, [])
        .flat_map(lambda seen, ctx: [{"eventId": e, "windowStart": ctx["windowStart"]} for e in seen])
        .to(client.queue(unique))
    )
    runner = await run(stream, name("dedup"), node, batch_size=3)
    try:
        got = await drain(client, unique, 5)
        got += await settle(client, unique, len(got))
    finally:
        await runner.stop()
    assert sorted((m["data"]["windowStart"], m["data"]["eventId"]) for m in got) == [
        (T0, "e1"), (T0, "e2"), (T0, "e3"), (T0 + 300_000, "e1"), (T0 + 300_000, "e4"),
    ]


async def test_rate_limiter_gate(client, node):
    """Example 07: a token bucket per tenant. A denied tail waits for its
    lease to end and comes back in order; every request passes once."""
    src, approved = name("rl-requests"), name("rl-approved")
    await client.queue(src).config({"leaseTime": 1, "retryLimit": 100}).create()
    tenants, per_tenant, capacity = ["t0", "t1", "t2"], 12, 4
    for t in tenants:
        await client.queue(src).partition(t).push([{"data": {"tenant": t, "seq": s}} for s in range(per_tenant)])
    stream = (
        Stream.from_(client.queue(src))
        .gate(token_bucket_gate(capacity=capacity, refill_per_sec=8))
        .to(client.queue(approved))
    )
    query = name("rl")
    started = time.time()
    runner = await run(stream, query, node, batch_size=10, max_partitions=3, reset=True)
    try:
        got = await drain(client, approved, per_tenant * len(tenants), timeout=30)
        elapsed = time.time() - started
        got += await settle(client, approved, len(got))
        metrics = runner.metrics()
    finally:
        await runner.stop()
    by_tenant = {t: [m["data"]["seq"] for m in got if m["data"]["tenant"] == t] for t in tenants}
    assert by_tenant == {t: list(range(per_tenant)) for t in tenants}, by_tenant
    # The bucket held the burst back: the gate denied, and the tail waited
    # for at least one lease to end.
    assert metrics.get("gateDenialsTotal", 0) > 0, metrics
    assert elapsed > 1.0


async def test_the_routes_answer_as_the_client_expects(client, node):
    """Registration is idempotent by config hash (409 on a change, unless
    reset), state reads by keys and prefix, and a cycle of an unknown query
    or a malformed body is refused with {error, code}."""
    src, q = name("src"), name("query")
    status, first = post(node, "/streams/v1/queries", {"name": q, "source_queue": src, "config_hash": "h1"})
    assert status == 200 and first["success"] and first["fresh"] and not first["reset"], first
    status, again = post(node, "/streams/v1/queries", {"name": q, "source_queue": src, "config_hash": "h1"})
    assert status == 200 and again["query_id"] == first["query_id"] and not again["fresh"]
    status, clash = post(node, "/streams/v1/queries", {"name": q, "source_queue": src, "config_hash": "h2"})
    assert status == 409 and clash["success"] is False and clash["code"] == "config_hash_mismatch", clash
    qid = first["query_id"]
    cycle = {
        "query_id": qid, "partition_id": "p", "consumer_group": "g", "ack": None, "release_lease": True,
        "state_ops": [{"type": "upsert", "key": "a\u001fx", "value": {"n": 1}}, {"type": "upsert", "key": "b", "value": {"windowEnd": 5}}],
        "push_items": [],
    }
    status, done = post(node, "/streams/v1/cycle", cycle)
    assert status == 200 and done["success"] and done["state_ops_applied"] == 2, done
    status, rows = post(node, "/streams/v1/state/get", {"query_id": qid, "partition_id": "p", "keys": []})
    assert [(r["key"], r["value"]) for r in rows["rows"]] == [("a\u001fx", {"n": 1}), ("b", {"windowEnd": 5})]
    status, rows = post(node, "/streams/v1/state/get", {"query_id": qid, "partition_id": "p", "keys": ["b"]})
    assert [r["key"] for r in rows["rows"]] == ["b"]
    status, rows = post(node, "/streams/v1/state/get", {"query_id": qid, "partition_id": "p", "keys": [], "key_prefix": "a"})
    assert [r["key"] for r in rows["rows"]] == ["a\u001fx"]
    status, rows = post(node, "/streams/v1/state/get", {"query_id": qid, "partition_id": "p", "keys": [], "ripe_at_or_before": 5})
    assert [r["key"] for r in rows["rows"]] == ["b"]
    # A flush's delete of a row already gone refuses the flush whole.
    flush = dict(cycle, state_ops=[{"type": "delete", "key": "b"}, {"type": "delete", "key": "gone"}])
    status, refused = post(node, "/streams/v1/cycle", flush)
    assert status == 200 and refused["success"] is False and refused["code"] == "state_conflict", refused
    status, rows = post(node, "/streams/v1/state/get", {"query_id": qid, "partition_id": "p", "keys": ["b"]})
    assert len(rows["rows"]) == 1, "nothing of the refused flush applied"
    # A reset takes a new id and wipes the state.
    status, reset = post(node, "/streams/v1/queries", {"name": q, "source_queue": src, "config_hash": "h2", "reset": True})
    assert status == 200 and reset["reset"] and reset["query_id"] != qid, reset
    status, stale = post(node, "/streams/v1/cycle", cycle)
    assert status == 404 and stale["code"] == "unknown_query", stale
    status, rows = post(node, "/streams/v1/state/get", {"query_id": reset["query_id"], "partition_id": "p", "keys": []})
    assert rows["rows"] == []
    status, bad = post(node, "/streams/v1/cycle", {"partition_id": "p"})
    assert status == 400 and bad["code"] == "missing_field", bad


async def test_a_kill_9_mid_run_counts_every_input_exactly_once():
    """A windowed count per customer runs while its node is killed with
    kill -9 twice: once right after a cycle committed, before its answer
    reached the worker (which retries it), and once as a cycle was on its
    way (it never arrives; its messages come back when the lease ends).
    After each restart the run goes on, and in the end every input id is in
    exactly one window, emitted to the sink or still open in state."""
    node = Node()
    client = Queen(node.url)
    try:
        src, sink = name("events"), name("windows")
        await client.queue(src).config({"leaseTime": 2, "retryLimit": 1000}).create()
        customers, per_customer, window_ms = ["c0", "c1", "c2", "c3"], 150, 1_000
        for c in customers:
            # 10 inputs per 1 s window; the last one, far ahead, stays open.
            items = [{"data": {"id": f"{c}-{i}", "ts": T0 + i * 100}} for i in range(per_customer)]
            items.append({"data": {"id": f"{c}-last", "ts": T0 + 3_600_000}})
            for i in range(0, len(items), 25):
                await client.queue(src).partition(c).push(items[i : i + 25])
        stream = (
            Stream.from_(client.queue(src))
            .window_tumbling(seconds=window_ms / 1000, event_time=lambda m: m["data"]["ts"])
            .reduce(lambda acc, m: acc + [m["id"]], [])
            .map(lambda ids, ctx: {"customer": ctx["partition"], "windowStart": ctx["windowStart"], "ids": ids})
            .to(client.queue(sink))
        )
        runner = await run(stream, name("exactly-once"), node, batch_size=7, max_partitions=2)
        kills = KillsDuringCycles(node, runner)
        await asyncio.wait_for(kills.down.wait(), 30)
        await asyncio.to_thread(node.start)
        expected_windows = per_customer * 100 // window_ms
        got = await drain(client, sink, expected_windows * len(customers), timeout=60)
        got += await settle(client, sink, len(got), quiet=2)
        metrics = runner.metrics()
        await runner.stop()
        assert kills.done == ["after the commit", "before the cycle"]
        assert kills.retried is not None
        assert metrics["errorsTotal"] > 0, metrics
        emitted = [i for m in got for i in m["data"]["ids"]]
        open_ids = []
        for p in runner._recent_partitions:
            for row in state_of(node, runner._server_query_id, p):
                if isinstance(row["value"], dict) and "acc" in row["value"]:
                    open_ids += row["value"]["acc"]
        everything = sorted(emitted + open_ids)
        want = sorted([f"{c}-{i}" for c in customers for i in range(per_customer)] + [f"{c}-last" for c in customers])
        duplicated = sorted({i for i in everything if everything.count(i) > 1})
        assert not duplicated, f"counted twice: {duplicated[:20]}"
        assert everything == want, f"missing: {sorted(set(want) - set(everything))[:20]}"
        assert sorted(open_ids) == sorted(f"{c}-last" for c in customers)
    finally:
        await client.close()
        node.stop()


class KillsDuringCycles:
    """Wraps the worker's HTTP client: kills the node with kill -9 once
    right after a cycle that emits windows committed (the answer is lost;
    the node is restarted before the worker's retry of the same cycle, which
    must apply nothing), and once as a later cycle of a partition that
    already committed one is about to be sent (so the worker's last durable
    watermark is in state; `down` is set, and the test restarts the node)."""

    def __init__(self, node, runner):
        self.node, self.done, self.down = node, [], asyncio.Event()
        self.cycles, self.committed, self.retried = 0, set(), None
        self.real = runner.http._client.post
        runner.http._client.post = self.post

    def kill(self, when):
        self.node.kill9()
        self.done.append(when)
        self.down.set()

    async def post(self, url, json=None, headers=None):
        if not url.endswith("/streams/v1/cycle"):
            return await self.real(url, json=json, headers=headers)
        self.cycles += 1
        if self.done == ["after the commit"] and self.cycles >= 25 and json["partition_id"] in self.committed:
            self.kill("before the cycle")
            raise httpx.ConnectError("the node was killed before the cycle reached it")
        answer = await self.real(url, json=json, headers=headers)
        if answer.is_success and answer.json().get("success"):
            self.committed.add(json["partition_id"])
        if self.cycles >= 10 and json["push_items"] and not self.done:
            self.node.kill9()
            self.done.append("after the commit")
            self.node.start()
            self.retried = json
            raise httpx.ReadError("the node was killed before its answer arrived")
        return answer
