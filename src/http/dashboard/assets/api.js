// The HTTP API as the page reads it: a bearer token when the node checks
// JWTs, JSON answers, and a few helpers to build the page's elements.

const TOKEN_KEY = "queen.dashboard.token";
let needToken = false;
let askForToken = null;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function configure(config, ask) {
  needToken = !!config.jwt;
  askForToken = ask;
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t.trim());
  else sessionStorage.removeItem(TOKEN_KEY);
}

/// The role a token names (read without checking: the node checks it).
export function tokenRole(t = token()) {
  try {
    const body = JSON.parse(atob(t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    const roles = [body.role, ...(body.roles || [])].filter(Boolean);
    const rank = { "read-only": 1, "read-write": 2, admin: 3 };
    return roles.sort((a, b) => (rank[b] || 0) - (rank[a] || 0))[0] || null;
  } catch {
    return null;
  }
}

export function mayWrite() {
  if (!needToken) return true;
  const role = tokenRole();
  return role === "read-write" || role === "admin";
}

export async function request(method, path, body) {
  const headers = {};
  if (needToken && token()) headers.authorization = `Bearer ${token()}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (r.status === 401 && needToken && askForToken) {
    setToken(null);
    askForToken("The node refused the token: it is missing, expired or does not verify.");
  }
  const text = await r.text();
  let data = null;
  if (text && (r.headers.get("content-type") || "").includes("json")) data = JSON.parse(text);
  else data = text;
  if (!r.ok) {
    const code = data && data.code;
    const message = (data && data.error) || `${method} ${path} answered ${r.status}`;
    throw new ApiError(r.status, code, message);
  }
  return data;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);

export function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") s.set(k, v);
  const t = s.toString();
  return t ? `?${t}` : "";
}

export const enc = encodeURIComponent;

// Elements: h("tag.class", {attrs}, ...children); children are nodes,
// strings or arrays; null and false are skipped.
export function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split(".");
  const node = document.createElement(tag || "div");
  if (classes.length) node.className = classes.join(" ");
  if (attrs && (attrs.constructor !== Object || attrs instanceof Node)) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className += (node.className ? " " : "") + v;
    else if (k === "html") node.innerHTML = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  const add = (c) => {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) c.forEach(add);
    else node.append(c instanceof Node ? c : String(c));
  };
  children.forEach(add);
  return node;
}

export function num(n, digits = 0) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function duration(s) {
  if (s === null || s === undefined) return "–";
  s = Math.floor(s);
  const d = Math.floor(s / 86400), hr = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${hr}h`;
  if (hr) return `${hr}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

export function ago(iso) {
  if (!iso) return "–";
  const s = (Date.now() - Date.parse(iso)) / 1000;
  if (s < 0) return "just now";
  return `${duration(s)} ago`;
}

export function time(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

export function json(v) {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}

export function toast(text) {
  const t = h("div.toast", { role: "status" }, text);
  document.body.append(t);
  setTimeout(() => t.remove(), 3500);
}
