// The page: reads the address (#/view/arg?params), mounts the view, and
// refreshes it every few seconds; asks for a token when the node checks JWTs.

import { configure, setToken, token, tokenRole, h } from "./api.js";
import { VIEWS, ApiError } from "./views.js";

const POLL_MS = 3000;
const main = document.getElementById("main");
let generation = 0;
let timer = null;
let config = { jwt: false };

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query || ""));
  let name = parts[0] || "overview";
  if (name === "queues" && parts[1]) {
    name = "queue";
    params.arg = parts.slice(1).join("/");
  }
  return { name: VIEWS[name] ? name : "overview", params };
}

function go(change) {
  const { name, params } = parseHash();
  const next = { ...params, ...change };
  delete next.arg;
  const base = name === "queue" ? `queues/${encodeURIComponent(params.arg)}` : name === "overview" ? "" : name;
  const s = new URLSearchParams(Object.entries(next).filter(([, v]) => v !== "" && v !== undefined && v !== null)).toString();
  location.hash = `#/${base}${s ? `?${s}` : ""}`;
}

function setLive(ok) {
  const live = document.getElementById("live");
  live.classList.toggle("stale", !ok);
  live.textContent = ok ? `live · ${new Date().toTimeString().slice(0, 8)}` : "not refreshing";
}

function errorBox(e) {
  if (e instanceof ApiError && e.status === 403) {
    return h("div.panel.error", { "data-error": "forbidden" }, `Your token may not see this view: ${e.message}`);
  }
  return h("div.panel.error", { "data-error": e.code || "error" }, `Could not load this view: ${e.message}`);
}

async function mount() {
  const my = ++generation;
  clearTimeout(timer);
  const { name, params } = parseHash();
  const view = VIEWS[name];
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.nav === (name === "queue" ? "queues" : name));
  }
  document.title = `${view.title}${params.arg ? ` ${params.arg}` : ""} · Queen`;
  if (config.jwt && !token()) return askForToken();
  const controls = h("div", { "data-controls": name });
  // data-hash names the address this view was mounted for, so a reader can
  // tell the view of the current address from the one it replaces.
  const body = h("div", { "data-view": name, "data-hash": location.hash, "aria-busy": "true" });
  main.replaceChildren(controls, body);
  const ctx = {
    refresh: () => refresh(),
    redraw: () => refresh(),
  };
  try {
    if (view.controls) controls.replaceChildren((await view.controls(params, go)) || "");
  } catch (e) {
    if (my === generation) {
      body.replaceChildren(errorBox(e));
      body.setAttribute("aria-busy", "false");
    }
    return;
  }
  async function refresh() {
    if (my !== generation) return;
    clearTimeout(timer);
    try {
      const data = await view.load(params);
      if (my !== generation) return;
      body.replaceChildren(view.draw(data, params, ctx));
      body.setAttribute("aria-busy", "false");
      body.dataset.loadedAt = String(Date.now());
      setLive(true);
    } catch (e) {
      if (my !== generation) return;
      setLive(false);
      if (e instanceof ApiError && e.status === 401) return;
      body.replaceChildren(errorBox(e));
      body.setAttribute("aria-busy", "false");
    }
    if (my === generation) timer = setTimeout(refresh, POLL_MS);
  }
  await refresh();
}

function askForToken(why) {
  clearTimeout(timer);
  generation++;
  const dialog = document.getElementById("token-dialog");
  const error = document.getElementById("token-error");
  error.hidden = !why;
  error.textContent = why || "";
  main.replaceChildren(h("p.muted", "This node needs a token."));
  if (!dialog.open) dialog.showModal();
}

function showWho() {
  const who = document.getElementById("who");
  const out = document.getElementById("signout");
  if (!config.jwt) {
    who.textContent = "no authentication";
    out.hidden = true;
    return;
  }
  who.textContent = token() ? `token: ${tokenRole() || "no role"}` : "no token";
  out.hidden = !token();
}

async function start() {
  config = await (await fetch("/dashboard/config")).json();
  configure(config, (why) => {
    showWho();
    askForToken(why);
  });
  document.getElementById("token-form").addEventListener("submit", (e) => {
    const value = document.getElementById("token-input").value.trim();
    if (!value) {
      e.preventDefault();
      return;
    }
    setToken(value);
    showWho();
    mount();
  });
  document.getElementById("signout").addEventListener("click", () => {
    setToken(null);
    showWho();
    askForToken();
  });
  window.addEventListener("hashchange", mount);
  showWho();
  mount();
}

start();
