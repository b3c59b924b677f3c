// Small line plots drawn by hand in SVG: time on x, one or more series on y.

import { h, num } from "./api.js";

const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function clock(t) {
  return new Date(t).toTimeString().slice(0, 8);
}

// points: [{t: ms, ...}]; series: [{label, value: (p) => number, color}].
export function lineChart(title, points, series, opts = {}) {
  const W = 640, H = opts.height || 200, L = 52, R = 12, T = 12, B = 26;
  const fmt = opts.format || ((v) => num(v, v < 1 ? 2 : v < 10 ? 1 : 0));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const values = points.flatMap((p) => series.map((x) => x.value(p) || 0));
  const ymax = niceMax(Math.max(0, ...values));
  const t0 = points.length ? points[0].t : Date.now() - 60000;
  const t1 = points.length > 1 ? points[points.length - 1].t : t0 + 60000;
  const x = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / ymax) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (ymax * i) / 4;
    svg.append(s("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e5e7eb" }));
    svg.append(s("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#6b7280" }, fmt(v)));
  }
  for (let i = 0; i <= 3; i++) {
    const t = t0 + ((t1 - t0) * i) / 3;
    const anchor = i === 0 ? "start" : i === 3 ? "end" : "middle";
    svg.append(s("text", { x: x(t), y: H - 6, "text-anchor": anchor, "font-size": 11, fill: "#6b7280" }, clock(t)));
  }
  series.forEach((ser, i) => {
    if (points.length < 2) return;
    const d = points.map((p, j) => `${j ? "L" : "M"}${x(p.t).toFixed(1)},${y(ser.value(p) || 0).toFixed(1)}`).join("");
    if (i === 0) {
      const area = `${d}L${x(t1).toFixed(1)},${y(0)}L${x(t0).toFixed(1)},${y(0)}Z`;
      svg.append(s("path", { d: area, fill: ser.color, "fill-opacity": 0.08 }));
    }
    svg.append(s("path", { d, fill: "none", stroke: ser.color, "stroke-width": 2, "stroke-linejoin": "round", "data-series": ser.label }));
  });
  if (points.length < 2) {
    svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#9ca3af", "font-size": 13 }, "collecting samples…"));
  }
  // Hover: a rule and the values at the nearest sample.
  const rule = s("line", { y1: T, y2: H - B, stroke: "#9ca3af", "stroke-dasharray": "3 3", visibility: "hidden" });
  const tip = s("text", { y: T + 12, "font-size": 11, fill: "#111827", visibility: "hidden" });
  svg.append(rule, tip);
  svg.addEventListener("mousemove", (e) => {
    if (points.length < 2) return;
    const box = svg.getBoundingClientRect();
    const px = ((e.clientX - box.left) / box.width) * W;
    const t = t0 + ((px - L) / (W - L - R)) * (t1 - t0);
    const p = points.reduce((a, b) => (Math.abs(b.t - t) < Math.abs(a.t - t) ? b : a));
    rule.setAttribute("x1", x(p.t));
    rule.setAttribute("x2", x(p.t));
    tip.textContent = `${clock(p.t)}  ` + series.map((ser) => `${ser.label} ${fmt(ser.value(p) || 0)}`).join("  ");
    const left = x(p.t) > W / 2;
    tip.setAttribute("x", left ? x(p.t) - 6 : x(p.t) + 6);
    tip.setAttribute("text-anchor", left ? "end" : "start");
    rule.setAttribute("visibility", "visible");
    tip.setAttribute("visibility", "visible");
  });
  svg.addEventListener("mouseleave", () => {
    rule.setAttribute("visibility", "hidden");
    tip.setAttribute("visibility", "hidden");
  });
  const legend = h("div.legend", series.map((ser) => h("span", h("i", { style: `background:${ser.color}` }), ser.label)));
  return h("div.panel.plot", { "data-plot": opts.id || title }, h("h2", title), svg, legend);
}

// A horizontal bar for a share of a whole.
export function bar(value, max) {
  const pct = max > 0 ? Math.min(100, (100 * value) / max) : 0;
  return h("div.bar", { title: `${num(value)} of ${num(max)}` }, h("span", { style: `width:${pct.toFixed(1)}%` }));
}
