"""The dashboard in a real browser: Debian's Chromium, headless, driven by
Playwright through executable_path (no browser download). A node holding
queues, consumer groups (a share group among them), dead letters and traces; each view is loaded,
checked against the HTTP API, and photographed into the output directory
(QUEEN_DASHBOARD_SHOTS, default target/dashboard-screenshots); a dead letter
is retried from the page; any console error fails the test."""

import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import jwt
import pytest

from conftest import ROOT, Node

pytest.importorskip("playwright")
from playwright.sync_api import expect, sync_playwright  # noqa: E402

CHROMIUM = os.environ.get("QUEEN_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("QUEEN_DASHBOARD_SHOTS", ROOT / "target" / "dashboard-screenshots"))
SECRET = "dashboard-test-secret-of-enough-length"

if not os.path.exists(CHROMIUM):
    if os.environ.get("CI"):
        raise RuntimeError(f"no Chromium at {CHROMIUM}: scripts/test installs Debian's")
    pytest.skip(f"no Chromium at {CHROMIUM} (scripts/test installs Debian's)", allow_module_level=True)


def call(node, method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(node.url + path, data=data, method=method)
    if body is not None:
        req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
        if r.status == 204 or not text:
            return None
        return json.loads(text) if r.headers.get("content-type", "").startswith("application/json") else text


def push(node, queue, partition, tid, payload):
    item = {"queue": queue, "partition": partition, "transactionId": tid, "payload": payload}
    return call(node, "POST", "/api/v1/push", {"items": [item]})


def pop(node, queue, group=None, **extra):
    params = {"batch": 10, **extra}
    if group:
        params["consumerGroup"] = group
    return call(node, "GET", f"/api/v1/pop/queue/{queue}?{urllib.parse.urlencode(params)}")


def ack(node, message, status, group=None, error=None):
    body = {"transactionId": message["transactionId"], "partitionId": message["partitionId"],
            "leaseId": message.get("leaseId"), "status": status}
    if group:
        body["consumerGroup"] = group
    if error:
        body["error"] = error
    return call(node, "POST", "/api/v1/ack", body)


def seed(node):
    """Queues, partitions, a consumer group, pops and acks, dead letters (a
    nack past the retry limit) and traces."""
    call(node, "POST", "/api/v1/configure",
         {"queue": "orders", "namespace": "shop", "task": "fulfil",
          "options": {"retryLimit": 1, "retryDelay": 0, "leaseTime": 30}})
    call(node, "POST", "/api/v1/configure", {"queue": "emails", "options": {"retryLimit": 0, "retryDelay": 0}})
    for i in range(6):
        push(node, "orders", "eu" if i % 2 else "us", f"order-{i}", {"id": i, "total": 10 * i})
    for i in range(4):
        push(node, "emails", "Default", f"mail-{i}", {"to": f"user{i}@example.com"})
    # billing (a named group) takes and completes the us partition's messages.
    taken = pop(node, "orders", "billing", partitions=1)
    for m in taken["messages"]:
        ack(node, m, "completed", group="billing")
    # Queue mode fails order-1 twice on eu: past retryLimit 1, a dead letter.
    for _ in range(2):
        got = pop(node, "orders", partitions=2)
        for m in got["messages"]:
            ack(node, m, "failed" if m["transactionId"] == "order-1" else "completed", error="card declined")
    # emails: retryLimit 0, so one failure dead-letters mail-0; mail-1 is done.
    got = pop(node, "emails", batch=2)
    ack(node, got["messages"][0], "failed", error="mailbox full")
    ack(node, got["messages"][1], "completed")
    # A consumer group on emails that has not started yet: lag 4.
    pop(node, "emails", "archiver", batch=1)
    # A share group on jobs: two pops hold a record each under their own
    # leases; a third record failed once and waits out its retry delay.
    call(node, "POST", "/api/v1/configure", {"queue": "jobs", "options": {"retryDelay": 3_600_000}})
    for i in range(5):
        push(node, "jobs", "Default", f"job-{i}", {"job": i})
    first = pop(node, "jobs", "workers", shared="true", batch=2, leaseSeconds=600)
    pop(node, "jobs", "workers", batch=1, leaseSeconds=600)
    ack(node, first["messages"][0], "failed", group="workers", error="worker crashed")
    # Traces, under two names, on orders' messages.
    page = call(node, "GET", "/api/v1/messages?queue=orders&limit=100")
    by_tid = {m["transactionId"]: m for m in page["messages"]}
    for tid, step in [("order-0", "received"), ("order-0", "charged"), ("order-2", "received")]:
        call(node, "POST", "/api/v1/traces", {
            "transactionId": tid, "partitionId": by_tid[tid]["partitionId"], "consumerGroup": "billing",
            "traceNames": ["order-flow", f"tenant-{tid[-1]}"], "eventType": "step", "data": {"step": step}})
    dlq = call(node, "GET", "/api/v1/dlq?queue=orders")
    assert dlq["total"] == 1, dlq
    assert call(node, "GET", "/api/v1/dlq?queue=emails")["total"] == 1


@pytest.fixture(scope="module")
def seeded():
    n = Node()
    seed(n)
    yield n
    n.stop()


@pytest.fixture(scope="module")
def browser():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


class Page:
    """A browser page that records console errors and uncaught exceptions."""

    def __init__(self, browser, node):
        self.context = browser.new_context(viewport={"width": 1360, "height": 900})
        self.page = self.context.new_page()
        self.node = node
        self.errors = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))

    def open(self, hash_path):
        self.page.goto(f"{self.node.url}/#/{hash_path}")
        self.loaded()

    def loaded(self):
        """Waits for the view of the page's current address to have drawn:
        the view it replaces, still on the page until the new one mounts,
        carries another address in data-hash."""
        self.page.wait_for_function(
            "() => { const v = document.querySelector('[data-view]');"
            " return v && v.dataset.hash === location.hash && v.getAttribute('aria-busy') === 'false'; }",
            timeout=15000)
        return self.page

    def fresh(self):
        """Waits for the next refresh, so what is shown was read after now."""
        since = int(time.time() * 1000)
        self.page.wait_for_function(
            f"() => {{ const v = document.querySelector('[data-view]'); return v && Number(v.dataset.loadedAt) > {since}; }}",
            timeout=15000)

    def shot(self, name):
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def text(self, selector):
        return self.page.locator(selector).inner_text().strip()

    def close(self):
        self.context.close()
        assert not self.errors, "\n".join(self.errors)


def n(text):
    """A number as the page prints it (1,234)."""
    return int(text.replace(",", "").strip())


def row_cells(page, table, row):
    loc = page.locator(f'[data-table="{table}"] tr[data-row="{row}"]')
    return {k: loc.locator(f'[data-k="{k}"]').first.inner_text().strip()
            for k in loc.locator("[data-k]").evaluate_all("els => els.map(e => e.dataset.k)")}


def test_every_view_against_the_api(seeded, browser):
    node = seeded
    p = Page(browser, node)
    page = p.page
    try:
        # The page and its assets come from the binary; nothing else is asked for.
        requests = []
        page.on("request", lambda r: requests.append(r.url))

        # Overview: the counts are /api/v1/status's; the plots have points.
        deadline = time.time() + 10
        while len(call(node, "GET", "/api/v1/dashboard/history")["samples"]) < 3 and time.time() < deadline:
            time.sleep(0.5)
        p.open("")
        p.fresh()
        status = call(node, "GET", "/api/v1/status")
        for key in ["queues", "partitions", "messages", "pending", "consumerGroups", "deadLetters"]:
            assert n(p.text(f'[data-stat="{key}"] .value')) == status[key], key
        assert page.locator('[data-plot="throughput"] path[data-series="pushed"]').count() == 1
        assert page.locator('[data-plot="depth"] path[data-series^="depth"]').count() == 1
        queues = call(node, "GET", "/api/v1/status/queues")["queues"]
        for q in queues:
            cells = row_cells(page, "top-queues", q["name"])
            assert n(cells["pending"]) == q["pending"] and n(cells["messages"]) == q["messages"], (q, cells)
        p.shot("overview")

        # Queues: one row per queue, as /api/v1/status/queues has it.
        page.click('nav a[data-nav="queues"]')
        p.loaded()
        assert page.locator('[data-table="queues"] tbody tr').count() == len(queues)
        for q in queues:
            cells = row_cells(page, "queues", q["name"])
            for key in ["partitions", "messages", "pending", "consumerGroups", "deadLetters"]:
                assert n(cells[key]) == q[key], (q["name"], key, cells)
        assert row_cells(page, "queues", "orders")["namespace"] == "shop"
        p.shot("queues")

        # A queue: its partitions and groups.
        page.click('[data-table="queues"] tr[data-row="orders"] a')
        p.loaded()
        detail = call(node, "GET", "/api/v1/status/queues/orders")
        depth = {d["partition"]: d["pending"] for d in call(node, "GET", "/api/v1/resources/queues/orders/depth")["partitions"]}
        assert page.locator('[data-table="partitions"] tbody tr').count() == len(detail["partitions"]) == 2
        for part in detail["partitions"]:
            cells = row_cells(page, "partitions", part["name"])
            assert n(cells["highWatermark"]) == part["highWatermark"]
            assert n(cells["pending"]) == depth[part["name"]]
            assert cells["id"] == part["id"]
        for g in detail["consumerGroups"]:
            assert n(row_cells(page, "queue-groups", g["consumerGroup"])["pending"]) == g["pending"]
        assert p.text('[data-table="options"] [data-k="retryLimit"]') == "1"
        p.shot("queue")

        # Messages: each message's status for each group, as the API has it.
        p.open("messages?queue=orders")
        listed = call(node, "GET", "/api/v1/messages?queue=orders&limit=200")["messages"]
        assert page.locator('[data-table="messages"] > tbody > tr').count() == len(listed) == 6
        statuses = set()
        for group in ["__QUEUE_MODE__", "billing"]:
            for m in call(node, "GET", f"/api/v1/messages?queue=orders&consumerGroup={group}&limit=200")["messages"]:
                row = page.locator(f'[data-table="messages"] tr[data-row="{m["transactionId"]}"]')
                for g in m["consumerGroups"]:
                    shown = row.locator(f'[data-group="{g["consumerGroup"]}"]').get_attribute("data-status")
                    assert shown == g["status"], (m["transactionId"], g)
                    statuses.add((group, g["status"]))
        assert {("__QUEUE_MODE__", "dead_letter"), ("billing", "completed"), ("billing", "pending")} <= statuses, statuses
        # A message opened: its groups and its traces.
        page.click('[data-table="messages"] tr[data-row="order-0"]')
        page.wait_for_selector('tr[data-detail="order-0"] [data-table="traces"] li')
        traces = call(node, "GET", f"/api/v1/traces/{listed[0]['partitionId']}/order-0")
        assert page.locator('tr[data-detail="order-0"] [data-table="traces"] li').count() == traces["count"] == 2
        p.shot("messages")
        # A status filter: only dead letters of queue mode.
        page.fill('[data-control="group"]', "__QUEUE_MODE__")
        page.press('[data-control="group"]', "Enter")
        page.wait_for_function("() => location.hash.includes('group=__QUEUE_MODE__')")
        page.select_option('[data-control="status"]', "dead_letter")
        p.loaded()
        page.wait_for_function("() => location.hash.includes('status=dead_letter')")
        p.fresh()
        dead = call(node, "GET", "/api/v1/messages?queue=orders&status=dead_letter")["messages"]
        assert [r.get_attribute("data-row") for r in page.locator('[data-table="messages"] > tbody > tr').all()] == \
            [m["transactionId"] for m in dead] == ["order-1"]

        # Dead letters: every queue's, then a retry from the page.
        page.click('nav a[data-nav="dlq"]')
        p.loaded()
        rows = call(node, "GET", "/api/v1/dlq?queue=orders")["messages"] + call(node, "GET", "/api/v1/dlq?queue=emails")["messages"]
        assert page.locator('[data-table="dlq"] tbody tr').count() == len(rows) == 2
        for m in rows:
            cells = row_cells(page, "dlq", f'{m["queueName"]}/{m["transactionId"]}/{m["consumerGroup"]}')
            assert cells["errorMessage"] == m["errorMessage"] and n(cells["retryCount"]) == m["retryCount"], (m, cells)
        p.shot("dead-letters")
        target = page.locator('[data-table="dlq"] tr[data-row="orders/order-1/__QUEUE_MODE__"]')
        target.locator('[data-action="retry"]').click()
        expect(target).to_have_count(0, timeout=10000)
        assert call(node, "GET", "/api/v1/dlq?queue=orders")["total"] == 0
        pid = rows[0]["partitionId"] if rows[0]["transactionId"] == "order-1" else rows[1]["partitionId"]
        after = call(node, "GET", f"/api/v1/messages/{pid}/order-1")
        mode = [g for g in after["consumerGroups"] if g["consumerGroup"] == "__QUEUE_MODE__"][0]
        assert mode["status"] == "pending", after
        assert page.locator('[data-table="dlq"] tbody tr').count() == 1
        again = pop(node, "orders", partitions=2)
        assert again["messages"][0]["transactionId"] == "order-1", "the retried message is delivered again, first"

        # Consumer groups: their lag, and a group's partitions opened.
        page.click('nav a[data-nav="groups"]')
        p.loaded()
        p.fresh()
        groups = call(node, "GET", "/api/v1/consumer-groups")
        assert page.locator('[data-table="groups"] > tbody > tr').count() == len(groups)
        for g in groups:
            assert n(row_cells(page, "groups", g["name"])["totalLag"]) == g["totalLag"], g
        assert {g["name"] for g in groups} >= {"billing", "archiver", "__QUEUE_MODE__"}
        page.click('[data-table="groups"] tr[data-row="archiver"]')
        page.wait_for_selector('tr[data-detail="archiver"] [data-table="group-partitions"]')
        archiver = [g for g in groups if g["name"] == "archiver"][0]
        part = archiver["queues"][0]["partitions"][0]
        cells = row_cells(page, "group-partitions", f'emails/{part["partition"]}')
        assert n(cells["lag"]) == part["lag"] > 0 and n(cells["highWatermark"]) == part["highWatermark"]
        p.shot("consumer-groups")

        # A share group: its members, the records they hold with their
        # delivery counts, and the record waiting for another delivery.
        workers = [g for g in groups if g["name"] == "workers"][0]
        assert workers["share"] is True and workers["inFlight"] == 2, workers
        assert page.locator('[data-table="groups"] tr[data-row="workers"][data-share="true"]').count() == 1
        page.click('[data-table="groups"] tr[data-row="workers"]')
        page.wait_for_selector('tr[data-detail="workers"] [data-table="share-in-flight"]')
        assert len(workers["members"]) == 2, workers["members"]
        for m in workers["members"]:
            assert m["kind"] == "holder" and m["inFlight"] == 1, m
            assert n(row_cells(page, "share-members", m["memberId"])["inFlight"]) == 1
        share = workers["queues"][0]["partitions"][0]["share"]
        assert share["inFlightCount"] == 2 and [r["deliveryCount"] for r in share["inFlight"]] == [1, 1], share
        assert {r["holder"] for r in share["inFlight"]} == {m["memberId"] for m in workers["members"]}
        for r in share["inFlight"]:
            cells = row_cells(page, "share-in-flight", f'jobs/Default/{r["offset"]}')
            assert cells["holder"] == r["holder"] and n(cells["deliveryCount"]) == r["deliveryCount"], (r, cells)
        assert [r["deliveries"] for r in share["redelivery"]] == [1], share
        waiting = share["redelivery"][0]
        assert n(row_cells(page, "share-redelivery", f'jobs/Default/{waiting["offset"]}')["deliveries"]) == 1
        p.shot("share-group")

        # Traces: the names, and a name's events.
        page.click('nav a[data-nav="traces"]')
        p.loaded()
        names = call(node, "GET", "/api/v1/traces/names")["names"]
        for t in names:
            assert n(row_cells(page, "trace-names", t["traceName"])["count"]) == t["count"]
        page.click('[data-table="trace-names"] tr[data-row="order-flow"] a')
        page.wait_for_function("() => location.hash.includes('name=order-flow')")
        p.loaded()
        events = call(node, "GET", "/api/v1/traces/by-name/order-flow")
        assert page.locator('[data-table="traces"] li').count() == events["total"] == 3
        assert "order-flow" in p.text('[data-heading="trace"]')
        p.shot("traces")

        # Analytics: the counters since boot.
        page.click('nav a[data-nav="analytics"]')
        p.loaded()
        p.fresh()
        analytics = call(node, "GET", "/api/v1/status/analytics")
        assert n(p.text('[data-stat="messagesAppended"] .value')) == analytics["totals"]["messagesAppended"]
        assert page.locator('[data-table="per-second"] tbody tr').count() == len(analytics["perSecond"])
        p.shot("analytics")

        # System: /health, the process, /metrics; no raft on a node alone.
        page.click('nav a[data-nav="system"]')
        p.loaded()
        health = call(node, "GET", "/health")
        assert p.text('[data-stat="role"] .value') == health["role"]
        assert p.text('[data-stat="status"] .value') == health["status"]
        assert page.locator('[data-empty="raft"]').count() == 1
        metrics = [line.split(" ")[0] for line in call(node, "GET", "/metrics").splitlines()
                   if line and not line.startswith("#") and "_bucket{" not in line]
        shown = page.locator('[data-table="metrics"] tbody tr').evaluate_all("rs => rs.map(r => r.dataset.row)")
        assert shown == metrics
        p.shot("system")

        foreign = [u for u in requests if not u.startswith(node.url)]
        assert not foreign, f"the page asked for something off the node: {foreign}"
    finally:
        p.close()


def test_raft_membership_on_a_cluster_node(cluster, browser):
    from conftest import leader

    lead = cluster[leader(cluster, [0, 1, 2])]
    p = Page(browser, lead)
    try:
        p.open("system")
        members = call(lead, "GET", "/api/v1/system/raft/membership")["membership"]
        rows = p.page.locator('[data-table="members"] tbody tr')
        expect(rows).to_have_count(3)
        assert sorted(r.get_attribute("data-row") for r in rows.all()) == sorted(str(m["nodeId"]) for m in members["members"])
        assert p.page.locator('[data-table="members"] .badge.leader').count() == 1
        assert p.text('[data-stat="role"] .value') == "leader"
        p.shot("system-cluster")
    finally:
        p.close()


def token(role):
    return jwt.encode({"role": role, "sub": "dashboard-test", "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")


def test_with_jwt_it_asks_for_a_token(browser):
    node = Node({"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256", "JWT_SECRET": SECRET})
    try:
        admin = token("admin")
        call(node, "POST", "/api/v1/push", {"items": [{"queue": "secured", "transactionId": "s-1", "payload": 1}]}, token=admin)
        with pytest.raises(urllib.error.HTTPError) as refused:
            call(node, "GET", "/api/v1/status")
        assert refused.value.code == 401
        p = Page(browser, node)
        try:
            p.page.goto(f"{node.url}/#/queues")
            dialog = p.page.locator("#token-dialog")
            expect(dialog).to_be_visible()
            p.shot("sign-in")
            p.page.fill("#token-input", token("read-only"))
            p.page.click("#token-submit")
            p.loaded()
            assert n(row_cells(p.page, "queues", "secured")["messages"]) == 1
            assert "read-only" in p.text("#who")
            # A read-only token may not retry: the dead-letter view says so.
            p.page.click('nav a[data-nav="dlq"]')
            p.loaded()
            assert "read-only" in p.text("[data-view]")
        finally:
            p.close()
    finally:
        node.stop()
