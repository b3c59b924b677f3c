// The dashboard's views. Each one: a title, optional controls (drawn once,
// they change the address), load(params) which reads the API, and
// draw(data, params, ctx) which builds what the view shows; the page calls
// load and draw again every few seconds.

import { get, post, q, enc, h, num, bytes, duration, ago, time, json, toast, mayWrite, ApiError } from "./api.js";
import { lineChart, bar } from "./plot.js";

const C = { push: "#4f46e5", consume: "#059669", depth: "#d97706", lag: "#dc2626", dead: "#7c3aed" };

// Which rows are opened, per view, kept across refreshes.
const opened = new Map();
function isOpen(view, key) {
  return (opened.get(view) || new Set()).has(key);
}
function toggle(view, key, ctx) {
  const set = opened.get(view) || new Set();
  set.has(key) ? set.delete(key) : set.add(key);
  opened.set(view, set);
  ctx.redraw();
}

function card(label, value, opts = {}) {
  return h("div.card", { class: opts.bad ? "bad" : null, "data-stat": opts.id || label },
    h("div.label", label), h("div.value", value));
}

function table(id, head, rows, empty = "Nothing yet.") {
  if (!rows.length) return h("p.muted", { "data-empty": id }, empty);
  return h("table", { "data-table": id },
    h("thead", h("tr", head.map((c) => (c.startsWith("#") ? h("th.num", c.slice(1)) : h("th", c))))),
    h("tbody", rows));
}

function cell(key, value, numeric = false) {
  return numeric ? h("td.num", { "data-k": key }, value) : h("td", { "data-k": key }, value);
}

function badge(status) {
  return h("span.badge", { class: status }, status.replace("_", " "));
}

function queueLink(name) {
  return h("a", { href: `#/queues/${enc(name)}` }, name);
}

function selectOf(name, values, current, go, blank) {
  const select = h("select", { name, "data-control": name, onchange: (e) => go({ [name]: e.target.value }) });
  if (blank !== undefined) select.append(h("option", { value: "" }, blank));
  for (const v of values) select.append(h("option", { value: v, selected: v === current }, v));
  return h("label", name, select);
}

async function queueNames() {
  const r = await get(`/api/v1/status/queues${q({ limit: 1000 })}`);
  return r.queues.map((x) => x.name);
}

function historyPoints(hist) {
  return hist.samples.map((s) => ({ ...s }));
}

// ---- Overview -------------------------------------------------------------

const overview = {
  title: "Overview",
  async load() {
    const [status, history, queues, lagging] = await Promise.all([
      get("/api/v1/status"),
      get("/api/v1/dashboard/history"),
      get(`/api/v1/status/queues${q({ limit: 1000 })}`),
      get(`/api/v1/consumer-groups/lagging${q({ minLagSeconds: 0 })}`),
    ]);
    return { status, history, queues, lagging };
  },
  draw({ status, history, queues, lagging }) {
    const pts = historyPoints(history);
    const last = pts[pts.length - 1] || {};
    const top = [...queues.queues].sort((a, b) => b.pending - a.pending || b.messages - a.messages).slice(0, 10);
    const maxPending = Math.max(1, ...top.map((x) => x.pending));
    return h("div",
      h("h1", "Overview", h("small", `${status.replicator} · ${status.role} · up ${duration(status.uptimeSeconds)} · v${status.version}`)),
      h("div.grid.cards",
        card("Queues", num(status.queues), { id: "queues" }),
        card("Partitions", num(status.partitions), { id: "partitions" }),
        card("Messages", num(status.messages), { id: "messages" }),
        card("Pending", num(status.pending), { id: "pending" }),
        card("Consumer groups", num(status.consumerGroups), { id: "consumerGroups" }),
        card("Dead letters", num(status.deadLetters), { id: "deadLetters", bad: status.deadLetters > 0 }),
        card("Push / s", num(last.pushRate || 0, 1), { id: "pushRate" }),
        card("Oldest unfinished", duration(last.lagSeconds || 0), { id: "lagSeconds" })),
      h("div.grid.plots",
        lineChart("Throughput (messages / s)", pts, [
          { label: "pushed", value: (p) => p.pushRate, color: C.push },
          { label: "consumed", value: (p) => p.consumeRate, color: C.consume },
        ], { id: "throughput" }),
        lineChart("Depth and lag (messages)", pts, [
          { label: "depth (queue mode)", value: (p) => p.depth, color: C.depth },
          { label: "lag (consumer groups)", value: (p) => p.lag, color: C.lag },
        ], { id: "depth" })),
      h("div.grid.two",
        h("div.panel", h("h2", "Deepest queues"), table("top-queues", ["Queue", "#Pending", "", "#Messages", "#Dead letters"],
          top.map((x) => h("tr", { "data-row": x.name }, cell("name", queueLink(x.name)), cell("pending", num(x.pending), true),
            h("td", bar(x.pending, maxPending)), cell("messages", num(x.messages), true), cell("deadLetters", num(x.deadLetters), true))),
          "No queue yet: push a message to create one.")),
        h("div.panel", h("h2", "Lagging consumers"), table("lagging", ["Group", "Queue", "Partition", "#Lag", "#Oldest"],
          lagging.slice(0, 10).map((x) => h("tr", { "data-row": `${x.consumerGroup}/${x.queueName}/${x.partition}` },
            cell("group", x.consumerGroup), cell("queue", queueLink(x.queueName)), cell("partition", x.partition),
            cell("lag", num(x.lag), true), cell("lagSeconds", duration(x.lagSeconds), true))),
          "Every consumer group is caught up."))));
  },
};

// ---- Queues ---------------------------------------------------------------

const queues = {
  title: "Queues",
  controls(params, go) {
    const input = h("input", { type: "search", placeholder: "search queues", value: params.search || "", "data-control": "search" });
    let timer;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => go({ search: input.value }), 300);
    });
    return h("div.toolbar", h("label", "search", input));
  },
  async load(params) {
    return get(`/api/v1/status/queues${q({ search: params.search, limit: 1000 })}`);
  },
  draw(data) {
    return h("div",
      h("h1", "Queues", h("small", `${num(data.total)} in all`)),
      h("div.panel", table("queues", ["Queue", "Namespace", "Task", "#Partitions", "#Messages", "#Pending", "#Groups", "#Dead letters", "Last write"],
        data.queues.map((x) => h("tr.clickable", { "data-row": x.name, onclick: () => (location.hash = `#/queues/${enc(x.name)}`) },
          cell("name", queueLink(x.name)), cell("namespace", x.namespace || "–"), cell("task", x.task || "–"),
          cell("partitions", num(x.partitions), true), cell("messages", num(x.messages), true), cell("pending", num(x.pending), true),
          cell("consumerGroups", num(x.consumerGroups), true), cell("deadLetters", num(x.deadLetters), true),
          cell("lastWriteAt", ago(x.lastWriteAt)))),
        "No queue matches.")));
  },
};

// ---- One queue ------------------------------------------------------------

const queue = {
  title: "Queue",
  async load(params) {
    const name = params.arg;
    const [status, resource, depth, history] = await Promise.all([
      get(`/api/v1/status/queues/${enc(name)}`),
      get(`/api/v1/resources/queues/${enc(name)}`),
      get(`/api/v1/resources/queues/${enc(name)}/depth`),
      get("/api/v1/dashboard/history"),
    ]);
    return { name, status, resource, depth, history };
  },
  draw({ name, status, resource, depth, history }) {
    const pending = new Map(depth.partitions.map((p) => [p.partition, p.pending]));
    const pts = history.samples.filter((s) => s.queues[name]).map((s) => ({ t: s.t, ...s.queues[name] }));
    const options = Object.entries(resource.options || {});
    return h("div",
      h("h1", name, h("small", [status.namespace && `namespace ${status.namespace}`, status.task && `task ${status.task}`].filter(Boolean).join(" · ") || "queue")),
      h("div.grid.cards",
        card("Partitions", num(status.partitions.length), { id: "partitions" }),
        card("Messages", num(status.messages), { id: "messages" }),
        card("Pending", num(status.pending), { id: "pending" }),
        card("Consumer groups", num(status.consumerGroups.length), { id: "consumerGroups" }),
        card("Dead letters", num(status.deadLetters), { id: "deadLetters", bad: status.deadLetters > 0 })),
      h("div.grid.plots",
        lineChart("Depth (queue mode)", pts, [{ label: "pending", value: (p) => p.depth, color: C.depth }], { id: "queue-depth" }),
        lineChart("Pushed (messages / s)", pts, [{ label: "pushed", value: (p) => p.pushRate, color: C.push }], { id: "queue-push" })),
      h("div.panel", h("h2", "Partitions"), table("partitions", ["Partition", "#Log start", "#High watermark", "#Messages", "#Pending", "Last write", "Id"],
        status.partitions.map((p) => h("tr", { "data-row": p.name },
          cell("name", h("a", { href: `#/messages${q({ queue: name, partition: p.name })}` }, p.name)),
          cell("logStart", num(p.logStart), true), cell("highWatermark", num(p.highWatermark), true), cell("messages", num(p.messages), true),
          cell("pending", num(pending.get(p.name) ?? 0), true), cell("lastWriteAt", ago(p.lastWriteAt)), cell("id", h("code", p.id)))))),
      h("div.grid.two",
        h("div.panel", h("h2", "Consumer groups"), table("queue-groups", ["Group", "#Pending", "#Partitions"],
          status.consumerGroups.map((g) => h("tr", { "data-row": g.consumerGroup },
            cell("group", h("a", { href: `#/messages${q({ queue: name, group: g.consumerGroup })}` }, g.consumerGroup)),
            cell("pending", num(g.pending), true), cell("partitions", num(g.partitions), true))),
          "No consumer group has popped this queue.")),
        h("div.panel", h("h2", "Options"), options.length
          ? h("dl.kv", { "data-table": "options" }, options.flatMap(([k, v]) => [h("dt", k), h("dd", { "data-k": k }, json(v))]))
          : h("p.muted", "Defaults."))));
  },
};

// ---- Messages -------------------------------------------------------------

const STATUSES = ["pending", "processing", "completed", "dead_letter"];

const messages = {
  title: "Messages",
  async controls(params, go) {
    const names = await queueNames();
    if (!params.queue && names.length) params.queue = names[0];
    const bar = h("div.toolbar",
      selectOf("queue", names, params.queue, (p) => go({ ...p, partition: "", group: "" })),
      h("label", "group", h("input", { name: "group", "data-control": "group", value: params.group || "", placeholder: "every group", size: 14,
        onchange: (e) => go({ group: e.target.value }) })),
      h("label", "partition", h("input", { name: "partition", "data-control": "partition", value: params.partition || "", placeholder: "every partition", size: 14,
        onchange: (e) => go({ partition: e.target.value }) })),
      selectOf("status", STATUSES, params.status, go, "any status"));
    return bar;
  },
  async load(params) {
    if (!params.queue) return { empty: true };
    // One list per group (the route answers for one group), merged by message.
    const groups = params.group ? [params.group]
      : (await get(`/api/v1/status/queues/${enc(params.queue)}`)).consumerGroups.map((g) => g.consumerGroup);
    if (!groups.includes("__QUEUE_MODE__") && !params.group) groups.unshift("__QUEUE_MODE__");
    const lists = await Promise.all(groups.map((g) =>
      get(`/api/v1/messages${q({ queue: params.queue, partition: params.partition, consumerGroup: g, status: params.status, limit: 200 })}`)));
    const byId = new Map();
    for (const l of lists) {
      for (const m of l.messages) {
        const seen = byId.get(m.id);
        if (seen) seen.consumerGroups.push(...m.consumerGroups);
        else byId.set(m.id, { ...m, consumerGroups: [...m.consumerGroups] });
      }
    }
    const list = { messages: [...byId.values()].sort((a, b) => a.partitionId.localeCompare(b.partitionId) || a.offset - b.offset) };
    const details = {};
    await Promise.all(list.messages.filter((m) => isOpen("messages", m.id)).map(async (m) => {
      const [full, traces] = await Promise.all([
        get(`/api/v1/messages/${enc(m.partitionId)}/${enc(m.transactionId)}`),
        get(`/api/v1/traces/${enc(m.partitionId)}/${enc(m.transactionId)}`),
      ]);
      details[m.id] = { full, traces };
    }));
    return { list, details };
  },
  draw(data, params, ctx) {
    if (data.empty) return h("div", h("h1", "Messages"), h("p.muted", "No queue yet."));
    const { list, details } = data;
    const rows = [];
    for (const m of list.messages) {
      rows.push(h("tr.clickable", { "data-row": m.transactionId, onclick: () => toggle("messages", m.id, ctx) },
        cell("offset", num(m.offset), true), cell("partition", m.partition), cell("transactionId", h("code", m.transactionId)),
        cell("groups", m.consumerGroups.map((g) => h("span", { "data-group": g.consumerGroup, "data-status": g.status },
          badge(g.status), h("small.muted", g.consumerGroup === "__QUEUE_MODE__" ? "queue mode" : g.consumerGroup), " "))),
        cell("createdAt", time(m.createdAt)),
        cell("data", h("code", JSON.stringify(m.data).slice(0, 80)))));
      const d = details[m.id];
      if (d) {
        rows.push(h("tr.detail", { "data-detail": m.transactionId }, h("td", { colspan: 6 },
          h("div.grid.two",
            h("div", h("h2", "Payload"), h("pre", json(d.full.data)),
              h("dl.kv", h("dt", "id"), h("dd", h("code", d.full.id)), h("dt", "partition id"), h("dd", h("code", d.full.partitionId)),
                h("dt", "trace id"), h("dd", d.full.traceId || "–")),
              h("h2", { style: "margin-top:12px" }, "Per group"),
              table("message-groups", ["Group", "Status", "#Retries", "Lease until"], d.full.consumerGroups.map((g) =>
                h("tr", { "data-row": g.consumerGroup }, cell("group", g.consumerGroup), cell("status", badge(g.status)),
                  cell("retryCount", num(g.retryCount), true), cell("leaseExpiresAt", time(g.leaseExpiresAt)))))),
            h("div", h("h2", `Traces (${d.traces.count})`), traceList(d.traces.traces))))));
      }
    }
    return h("div",
      h("h1", "Messages", h("small", `${params.queue} · ${list.messages.length} shown · click a row for its groups and traces`)),
      h("div.panel", table("messages", ["#Offset", "Partition", "Transaction", "Status per group", "Created", "Payload"], rows, "No message matches.")));
  },
};

function traceList(traces) {
  if (!traces.length) return h("p.muted", "No trace event.");
  return h("ul.timeline", { "data-table": "traces" }, traces.map((t) => h("li", { "data-row": t.id },
    h("div", h("span.badge", t.eventType), " ", h("small.muted", time(t.createdAt)), " ",
      t.consumerGroup ? h("small.muted", `group ${t.consumerGroup}`) : null, " ",
      (t.traceNames || []).map((n) => h("a.badge", { href: `#/traces${q({ name: n })}` }, n))),
    h("div", h("small.muted", "message "), h("code", t.transactionId)),
    h("code", JSON.stringify(t.data)))));
}

// ---- Dead letters ---------------------------------------------------------

const dlq = {
  title: "Dead letters",
  async controls(params, go) {
    const r = await get(`/api/v1/status/queues${q({ limit: 1000 })}`);
    const names = r.queues.filter((x) => x.deadLetters > 0).map((x) => x.name);
    return h("div.toolbar", selectOf("queue", names, params.queue, go, "every queue"));
  },
  async load(params) {
    let names = [params.queue];
    if (!params.queue) {
      const r = await get(`/api/v1/status/queues${q({ limit: 1000 })}`);
      names = r.queues.filter((x) => x.deadLetters > 0).map((x) => x.name);
    }
    const lists = await Promise.all(names.map((name) => get(`/api/v1/dlq${q({ queue: name, limit: 500 })}`)));
    return { rows: lists.flatMap((l) => l.messages), total: lists.reduce((a, l) => a + l.total, 0) };
  },
  draw({ rows, total }, params, ctx) {
    const canRetry = mayWrite();
    const retry = async (m, button) => {
      button.disabled = true;
      try {
        const r = await post(`/api/v1/messages/${enc(m.partitionId)}/${enc(m.transactionId)}/retry${q({ consumerGroup: m.consumerGroup })}`);
        toast(`${m.transactionId} sent back to ${m.consumerGroup} (${r.retried} retried)`);
      } catch (e) {
        toast(`retry refused: ${e.message}`);
      }
      ctx.refresh();
    };
    return h("div",
      h("h1", "Dead letters", h("small", `${num(total)} in all`)),
      canRetry ? null : h("p.muted", "Your token is read-only: retrying needs read-write."),
      h("div.panel", table("dlq", ["Queue", "Partition", "#Offset", "Transaction", "Group", "Error", "#Retries", "Moved", "Payload", ""],
        rows.map((m) => h("tr", { "data-row": `${m.queueName}/${m.transactionId}/${m.consumerGroup}` },
          cell("queue", queueLink(m.queueName)), cell("partition", m.partitionName), cell("offset", num(m.offset), true),
          cell("transactionId", h("code", m.transactionId)), cell("group", m.consumerGroup),
          cell("errorMessage", m.errorMessage || "–"), cell("retryCount", num(m.retryCount), true), cell("movedToDlqAt", ago(m.movedToDlqAt)),
          cell("data", h("code", JSON.stringify(m.data).slice(0, 60))),
          h("td", canRetry ? h("button", { "data-action": "retry", onclick: (e) => retry(m, e.target) }, "Retry") : null))),
        "No dead letter: every message was handled.")));
  },
};

// ---- Consumer groups ------------------------------------------------------

// A share group opened: its members (Kafka share consumers, and the holders
// of records such as HTTP pops' leases), the records held now with their
// delivery counts, and those waiting for another delivery.
function shareDetail(g, parts) {
  const held = parts.flatMap((p) => p.share.inFlight.map((r) => ({ ...r, queue: p.queue, partition: p.partition })));
  const again = parts.flatMap((p) => p.share.redelivery.map((r) => ({ ...r, queue: p.queue, partition: p.partition })));
  return h("div", { "data-share-detail": g.name },
    h("h2", { style: "margin-top:12px" }, "Members"),
    table("share-members", ["Member", "Kind", "Client", "#Partitions", "#In flight"], g.members.map((m) =>
      h("tr", { "data-row": m.memberId }, cell("memberId", h("code", m.memberId)), cell("kind", m.kind),
        cell("clientId", m.clientId ? `${m.clientId} (${m.clientHost})` : "–"),
        cell("partitions", m.partitions === undefined ? "–" : num(m.partitions), true), cell("inFlight", num(m.inFlight), true))),
    "No member: no Kafka share consumer here, and no record held."),
    h("h2", { style: "margin-top:12px" }, "In flight"),
    table("share-in-flight", ["Queue", "Partition", "#Offset", "Holder", "#Delivery", "Lock until"], held.map((r) =>
      h("tr", { "data-row": `${r.queue}/${r.partition}/${r.offset}` }, cell("queue", queueLink(r.queue)), cell("partition", r.partition),
        cell("offset", num(r.offset), true), cell("holder", h("code", r.holder)), cell("deliveryCount", num(r.deliveryCount), true),
        cell("lockExpiresAt", time(r.lockExpiresAt)))),
    "No record is held now."),
    again.length ? h("div",
      h("h2", { style: "margin-top:12px" }, "Waiting for another delivery"),
      table("share-redelivery", ["Queue", "Partition", "#Offset", "#Deliveries so far"], again.map((r) =>
        h("tr", { "data-row": `${r.queue}/${r.partition}/${r.offset}` }, cell("queue", queueLink(r.queue)), cell("partition", r.partition),
          cell("offset", num(r.offset), true), cell("deliveries", num(r.deliveries), true))))) : null);
}

const groups = {
  title: "Consumer groups",
  async load() {
    const [list, history] = await Promise.all([get("/api/v1/consumer-groups"), get("/api/v1/dashboard/history")]);
    return { list, history };
  },
  draw({ list, history }, params, ctx) {
    const pts = historyPoints(history);
    const rows = [];
    for (const g of list) {
      const parts = g.queues.flatMap((x) => x.partitions.map((p) => ({ ...p, queue: x.queueName })));
      const oldest = Math.max(0, ...parts.map((p) => p.lagSeconds));
      const name = g.name === "__QUEUE_MODE__" ? h("span", g.name, " ", h("small.muted", "queue mode"))
        : g.share ? h("span", g.name, " ", badge("share")) : g.name;
      rows.push(h("tr.clickable", { "data-row": g.name, "data-share": g.share ? "true" : null, onclick: () => toggle("groups", g.name, ctx) },
        cell("name", name),
        cell("queues", g.queues.map((x) => h("span.badge", x.queueName))), cell("partitions", num(parts.length), true),
        cell("totalLag", num(g.totalLag), true), cell("lagSeconds", duration(oldest), true)));
      if (isOpen("groups", g.name)) {
        rows.push(h("tr.detail", { "data-detail": g.name }, h("td", { colspan: 5 },
          table("group-partitions", ["Queue", "Partition", "#Committed", "#High watermark", "#Lag", "#Oldest", g.share ? "#In flight" : "Lease"],
            parts.map((p) => h("tr", { "data-row": `${p.queue}/${p.partition}` }, cell("queue", queueLink(p.queue)), cell("partition", p.partition),
              cell("committedOffset", num(p.committedOffset), true), cell("highWatermark", num(p.highWatermark), true),
              cell("lag", num(p.lag), true), cell("lagSeconds", duration(p.lagSeconds), true),
              g.share ? cell("inFlight", num(p.share.inFlightCount), true)
                : cell("leased", p.leased ? `until ${time(p.leaseExpiresAt)}` : "–")))),
          g.share ? shareDetail(g, parts) : null)));
      }
    }
    return h("div",
      h("h1", "Consumer groups", h("small", `${list.length} groups · click one for its partitions`)),
      h("div.grid.plots",
        lineChart("Lag (messages)", pts, [{ label: "consumer groups", value: (p) => p.lag, color: C.lag },
          { label: "queue mode", value: (p) => p.depth, color: C.depth }], { id: "lag" }),
        lineChart("Oldest unfinished message (s)", pts, [{ label: "age", value: (p) => p.lagSeconds, color: C.dead }], { id: "lag-seconds" })),
      h("div.panel", table("groups", ["Group", "Queues", "#Partitions", "#Lag", "#Oldest"], rows, "No consumer group yet.")));
  },
};

// ---- Traces ---------------------------------------------------------------

const traces = {
  title: "Traces",
  controls(params, go) {
    const pid = h("input", { name: "partitionId", placeholder: "partition id", size: 38, value: params.partitionId || "", "data-control": "partitionId" });
    const tid = h("input", { name: "transactionId", placeholder: "transaction id", size: 20, value: params.transactionId || "", "data-control": "transactionId" });
    return h("div.toolbar", h("form", { style: "display:flex;gap:8px", onsubmit: (e) => {
      e.preventDefault();
      go({ partitionId: pid.value.trim(), transactionId: tid.value.trim(), name: "" });
    } }, h("label", "message", pid, tid), h("button", { type: "submit" }, "Show its traces")));
  },
  async load(params) {
    const names = await get(`/api/v1/traces/names${q({ limit: 200 })}`);
    let events = null, heading = null;
    if (params.partitionId && params.transactionId) {
      const r = await get(`/api/v1/traces/${enc(params.partitionId)}/${enc(params.transactionId)}`);
      events = r.traces;
      heading = `message ${params.transactionId}`;
    } else {
      const name = params.name || (names.names[0] && names.names[0].traceName);
      if (name) {
        const r = await get(`/api/v1/traces/by-name/${enc(name)}${q({ limit: 200 })}`);
        events = r.traces;
        heading = name;
      }
    }
    return { names, events, heading };
  },
  draw({ names, events, heading }) {
    return h("div",
      h("h1", "Traces", h("small", `${num(names.total)} trace names`)),
      h("div.grid", { style: "grid-template-columns: minmax(260px, 1fr) 3fr" },
        h("div.panel", h("h2", "Trace names"), table("trace-names", ["Name", "#Events", "Last seen"],
          names.names.map((n) => h("tr.clickable", { "data-row": n.traceName, onclick: () => (location.hash = `#/traces${q({ name: n.traceName })}`) },
            cell("name", h("a", { href: `#/traces${q({ name: n.traceName })}` }, n.traceName)), cell("count", num(n.count), true), cell("lastSeen", ago(n.lastSeen)))),
          "No trace recorded yet: consumers record them with message.trace().")),
        h("div.panel", h("h2", { "data-heading": "trace" }, heading ? `Events: ${heading}` : "Events"), events ? traceList(events) : h("p.muted", "Pick a trace name."))));
  },
};

// ---- Analytics ------------------------------------------------------------

const analytics = {
  title: "Analytics",
  async load() {
    const [a, history] = await Promise.all([get("/api/v1/status/analytics"), get("/api/v1/dashboard/history")]);
    return { a, history };
  },
  draw({ a, history }) {
    const pts = historyPoints(history);
    const label = { messagesAppended: "Messages appended", duplicates: "Duplicates dropped", entriesApplied: "Entries applied",
      groupCommits: "Group commits", qlogBytesWritten: "Log bytes written", checkpoints: "Checkpoints" };
    return h("div",
      h("h1", "Analytics", h("small", `since ${time(a.since)} (${duration(a.uptimeSeconds)})`)),
      h("div.grid.cards", Object.entries(a.totals).map(([k, v]) =>
        card(label[k] || k, k === "qlogBytesWritten" ? bytes(v) : num(v), { id: k }))),
      h("div.grid.plots",
        lineChart("Pushed and consumed (messages / s)", pts, [
          { label: "pushed", value: (p) => p.pushRate, color: C.push },
          { label: "consumed", value: (p) => p.consumeRate, color: C.consume }], { id: "rates" }),
        lineChart("Dead letters", pts, [{ label: "dead letters", value: (p) => p.deadLetters, color: C.dead }], { id: "dead-letters" })),
      h("div.panel", h("h2", "Averages since boot (per second)"), table("per-second", ["Counter", "#Per second"],
        Object.entries(a.perSecond).map(([k, v]) => h("tr", { "data-row": k }, cell("name", label[k] || k), cell("value", num(v, 2), true))))),
      h("p.muted", `The node samples itself every ${history.intervalSeconds} s and keeps the last ${history.kept} samples in memory.`));
  },
};

// ---- System ---------------------------------------------------------------

function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    const name = line.slice(0, i);
    if (name.includes("_bucket{")) continue;
    out.push([name, Number(line.slice(i + 1))]);
  }
  return out;
}

const system = {
  title: "System",
  async load() {
    const [health, sys, workers, metrics] = await Promise.all([
      get("/health"), get("/api/v1/analytics/system-metrics"), get("/api/v1/analytics/worker-metrics"), get("/metrics"),
    ]);
    // A node that runs alone has no raft membership to ask for.
    const membership = health.raft ? (await get("/api/v1/system/raft/membership")).membership : null;
    return { health, sys, workers, metrics: parseMetrics(metrics), membership };
  },
  draw({ health, sys, workers, metrics, membership }) {
    const raft = health.raft;
    return h("div",
      h("h1", "System", h("small", `${health.replicator} · ${health.role} · v${health.version}`)),
      h("div.grid.cards",
        card("Health", badge(health.status), { id: "status" }),
        card("Role", health.role, { id: "role" }),
        card("Applied index", num(health.applied), { id: "applied" }),
        card("Term", num(health.term), { id: "term" }),
        card("Memory (RSS)", bytes(sys.rssBytes), { id: "rssBytes" }),
        card("CPU time", `${num(sys.cpuSeconds, 1)} s`, { id: "cpuSeconds" }),
        card("Threads", num(sys.threads), { id: "threads" }),
        card("Open files", num(sys.openFiles), { id: "openFiles" }),
        card("Cores", num(sys.cores), { id: "cores" }),
        card("Runtime workers", num(workers.workers), { id: "workers" }),
        card("Alive tasks", num(workers.aliveTasks), { id: "aliveTasks" }),
        card("Uptime", duration(sys.uptimeSeconds), { id: "uptime" })),
      h("div.panel", { "data-section": "raft" }, h("h2", "Raft membership"), raft
        ? h("div",
          h("dl.kv", h("dt", "this node"), h("dd", `${raft.node} (${raft.role})`), h("dt", "leader"), h("dd", raft.leader ?? "none"),
            h("dt", "term"), h("dd", raft.term), h("dt", "applied / commit / purged"), h("dd", `${raft.applied} / ${raft.commit} / ${raft.purged}`)),
          membership ? table("members", ["#Node", "Kind", "Raft", "HTTP", "#Matched"], membership.members.map((m) =>
            h("tr", { "data-row": String(m.nodeId) }, cell("nodeId", m.nodeId === membership.leader ? h("span", m.nodeId, " ", badge("leader")) : m.nodeId, true),
              cell("kind", badge(m.voter ? "voter" : "learner")), cell("raft", h("code", m.raft)), cell("http", m.http ? h("code", m.http) : "–"),
              cell("matched", num(m.matched), true)))) : null)
        : h("p.muted", { "data-empty": "raft" }, "This node runs alone (no QUEEN_RAFT_PEERS): it has no raft membership.")),
      h("div.panel", h("h2", "Metrics (/metrics)"), table("metrics", ["Series", "#Value"],
        metrics.map(([name, v]) => h("tr", { "data-row": name }, cell("name", h("code", name)), cell("value", num(v, 3), true))))));
  },
};

export const VIEWS = { overview, queues, queue, messages, dlq, groups, traces, analytics, system };
export { ApiError };
