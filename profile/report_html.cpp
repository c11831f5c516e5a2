// report.html: a fixed page (inline CSS and JS) around report_data's JSON.
//
// Timeline layout: each track is a lane; a lane has one row per nesting depth
// (outermost zone on top, like a flame chart), each zone coloured by its own
// category's activity, so the deepest row shows what the thread was doing and
// the rows above say why. Time no zone covers is the lane's idle background.
// Zones narrower than a pixel are drawn once per pixel column.
//
// The page reports how it went on <body>: data-status="ok" once everything is
// drawn, "error" with data-errors="..." when a script error was caught;
// data-lanes is the number of timeline lanes (the headless test reads these).
#include "profile/report_html.h"

namespace tandem::profile {
namespace {

constexpr const char* kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tandem profile</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 16px 20px; color: #222; background: #fafafa; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 22px 0 6px; }
.meta { color: #555; font-size: 13px; }
.verdict { background: #fff8e1; border-left: 4px solid #f0b400; padding: 8px 12px; margin: 10px 0; font-size: 14px; }
.note { background: #fdecea; border-left: 4px solid #d62728; padding: 6px 12px; font-size: 13px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 13px; }
.legend i, .dot { display: inline-block; width: 11px; height: 11px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
.bar { display: flex; align-items: center; gap: 10px; margin: 8px 0; font-size: 13px; color: #555; }
button { font: inherit; padding: 3px 12px; }
canvas { display: block; background: #fff; border: 1px solid #ddd; }
#timeline-box { position: relative; }
#tooltip { position: absolute; pointer-events: none; background: rgba(30,30,30,.92); color: #fff; font-size: 12px;
  padding: 5px 8px; border-radius: 4px; white-space: pre; display: none; z-index: 2; max-width: 600px; overflow: hidden; }
table { border-collapse: collapse; font-size: 13px; background: #fff; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e5e5e5; text-align: right; }
th { background: #f0f0f0; position: sticky; top: 0; } td:first-child, th:first-child { text-align: left; }
td.name { max-width: 520px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; text-align: left; }
.share { display: inline-block; height: 8px; vertical-align: 0; margin-left: 4px; }
</style>
<script>
"use strict";
// Before anything else: any script error lands on the body element (tests read it).
window.tandemErrors = [];
function tandemFail(msg) {
  window.tandemErrors.push(String(msg));
  const b = document.body;
  if (b) { b.dataset.status = "error"; b.dataset.errors = window.tandemErrors.join(" | "); }
}
window.addEventListener("error", e => tandemFail(e.message + " (" + e.lineno + ":" + e.colno + ")"));
window.addEventListener("unhandledrejection", e => tandemFail(e.reason));
</script>
</head>
<body data-status="loading">
<h1>tandem profile</h1>
<div class="meta" id="meta"></div>
<div class="verdict" id="verdict"></div>
<div class="note" id="decimated" hidden></div>
<h2>Timeline</h2>
<div class="legend" id="legend"></div>
<div class="bar"><button id="reset">Reset zoom</button>
<span>wheel: zoom around the cursor &middot; drag: pan &middot; double-click a zone: zoom to it &middot; one lane per thread, one row per nesting depth</span></div>
<div id="timeline-box"><canvas id="timeline"></canvas><div id="tooltip"></div></div>
<h2>Activity over the run</h2>
<div class="meta">Share of the live threads' time in each activity, per time bin (the innermost zone decides). The frame marks the timeline's view; click to centre it there.</div>
<canvas id="strip" height="90"></canvas>
<h2>Time split per thread</h2>
<div class="meta">Share of each thread's lifetime (first to last event); idle: no zone open.</div>
<table id="split"></table>
<h2>Stages</h2>
<div class="meta">Every zone name; self: less the zones nested in it; share: total / wall (over 100% on several threads at once).</div>
<table id="stages"></table>
<div id="gpu-section" hidden>
<h2>GPU</h2>
<div class="meta" id="gpu-line"></div>
<table id="kernels"></table>
<table id="copies"></table>
<div class="meta">GPU time by the zone whose thread launched it (per layer in training).</div>
<table id="gpu-stages"></table>
</div>
<div id="layer-section" hidden>
<h2>Layers</h2>
<div class="meta">Training: host thread time per layer, a split layer's CPU part, and the GPU time the layer launched; each inclusive of nested layers.</div>
<table id="layers"></table>
</div>
<div id="counter-section" hidden>
<h2>Counters</h2>
<div class="meta">Samples over the run (queue depths, images, memory); the trace has them over time.</div>
<table id="counters"></table>
</div>
<h2>Profiler overhead</h2>
<div class="meta" id="overhead"></div>
)HTML";

constexpr const char* kScript = R"HTML(
<script>
"use strict";
(function () {
const D = JSON.parse(document.getElementById("tandem-data").textContent);
const COLORS = { compute: "#2ca02c", wait_gpu: "#8e44ad", io: "#f08c00", wait_lock: "#d62728", idle: "#ececec" };
const ACT = D.activities.map(a => a.key);
const LABEL = Object.fromEntries(D.activities.map(a => [a.key, a.label]));
const S = D.summary;
const WALL = Math.max(D.wall_ns, 1);
const LABEL_W = 180, ROW_H = 15, LANE_GAP = 8, AXIS_H = 22;

function fmtDur(ns) {
  if (ns < 1e3) return Math.round(ns) + " ns";
  if (ns < 1e6) return (ns / 1e3).toPrecision(3) + " us";
  if (ns < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
  return (ns / 1e9).toFixed(2) + " s";
}
function pct(x) { return (100 * x).toFixed(1) + "%"; }
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
function colorOf(loc) { return COLORS[ACT[D.location_activity[loc]]]; }

// Lanes: per track, one row per depth that has zones; a row's zones are in
// begin order and do not overlap, so their ends are sorted too.
const lanes = D.tracks.map(t => {
  const z = t.zones, byDepth = [];
  for (let i = 0; i < z.begin.length; i++) (byDepth[z.depth[i]] = byDepth[z.depth[i]] || []).push(i);
  const rows = byDepth.filter(r => r).map(idx => ({
    b: Float64Array.from(idx, i => z.begin[i]),
    e: Float64Array.from(idx, i => z.begin[i] + z.dur[i]),
    loc: Int32Array.from(idx, i => z.loc[i]),
  }));
  if (rows.length === 0) rows.push({ b: new Float64Array(0), e: new Float64Array(0), loc: new Int32Array(0) });
  return { track: t, rows };
});
let y = AXIS_H;
for (const lane of lanes) { lane.y = y; lane.h = lane.rows.length * ROW_H; y += lane.h + LANE_GAP; }
const TL_H = y;

// First zone of a row ending after t.
function firstEndingAfter(row, t) {
  let lo = 0, hi = row.e.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (row.e[m] <= t) lo = m + 1; else hi = m; }
  return lo;
}

let v0 = 0, v1 = WALL;
const tl = document.getElementById("timeline"), tip = document.getElementById("tooltip");
const ctx = tl.getContext("2d");
function plotW() { return Math.max(tl.clientWidth - LABEL_W, 10); }
function xOf(t) { return LABEL_W + (t - v0) / (v1 - v0) * plotW(); }
function tOf(x) { return v0 + (x - LABEL_W) / plotW() * (v1 - v0); }

function setView(a, b) {
  let span = Math.min(Math.max(b - a, 100), WALL);
  a = Math.min(Math.max(a, 0), WALL - span);
  v0 = a; v1 = a + span;
  draw(); drawStrip();
}

function sizeCanvas(c, h) {
  const dpr = window.devicePixelRatio || 1, w = c.parentElement.clientWidth;
  c.style.width = w + "px"; c.style.height = h + "px";
  c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  return g;
}

function niceStep(span, px) {
  const raw = span / Math.max(px / 110, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function drawAxis(W) {
  ctx.fillStyle = "#555"; ctx.font = "11px sans-serif"; ctx.textBaseline = "middle";
  const step = niceStep(v1 - v0, W - LABEL_W);
  ctx.strokeStyle = "#eee";
  for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
    const x = xOf(t);
    ctx.beginPath(); ctx.moveTo(x, AXIS_H - 4); ctx.lineTo(x, TL_H); ctx.stroke();
    if (x + 60 < W) ctx.fillText(fmtDur(t), x + 3, AXIS_H / 2);
  }
}

function drawRow(row, top) {
  let lastPx = -1;
  for (let i = firstEndingAfter(row, v0); i < row.b.length && row.b[i] < v1; i++) {
    const x0 = Math.max(xOf(row.b[i]), LABEL_W), x1 = Math.min(xOf(row.e[i]), LABEL_W + plotW());
    const w = x1 - x0;
    if (w < 1) {
      const px = Math.floor(x0);
      if (px === lastPx) continue;
      lastPx = px;
      ctx.fillStyle = colorOf(row.loc[i]);
      ctx.fillRect(px, top, 1, ROW_H - 1);
      continue;
    }
    ctx.fillStyle = colorOf(row.loc[i]);
    ctx.fillRect(x0, top, w > 3 ? w - 1 : w, ROW_H - 1);
    lastPx = Math.floor(x1);
    if (w > 40) {
      const name = D.names[row.loc[i]];
      let text = name;
      const fit = Math.floor((w - 6) / 6.2);
      if (text.length > fit) text = fit > 3 ? text.slice(0, fit - 1) + "\u2026" : "";
      if (text) { ctx.fillStyle = "#fff"; ctx.fillText(text, x0 + 3, top + ROW_H / 2); }
    }
  }
}

function draw() {
  const W = tl.parentElement.clientWidth;
  sizeCanvas(tl, TL_H);
  ctx.clearRect(0, 0, W, TL_H);
  drawAxis(W);
  ctx.font = "11px sans-serif"; ctx.textBaseline = "middle";
  for (const lane of lanes) {
    const t = lane.track;
    ctx.fillStyle = "#333";
    ctx.fillText((t.kind === "gpu_stream" ? "GPU " : "") + t.name, 6, lane.y + ROW_H / 2);
    ctx.save();
    ctx.beginPath(); ctx.rect(LABEL_W, lane.y, plotW(), lane.h); ctx.clip();
    ctx.fillStyle = COLORS.idle;
    const a = xOf(t.begin_ns), b = xOf(t.end_ns);
    ctx.fillRect(a, lane.y, Math.max(b - a, 1), lane.h);
    lane.rows.forEach((row, r) => drawRow(row, lane.y + r * ROW_H));
    ctx.restore();
  }
}

function hit(x, yy) {
  if (x < LABEL_W) return null;
  for (const lane of lanes) {
    if (yy < lane.y || yy >= lane.y + lane.h) continue;
    const row = lane.rows[Math.floor((yy - lane.y) / ROW_H)];
    const tol = 2 * (v1 - v0) / plotW(), t = tOf(x);
    const i = firstEndingAfter(row, t - tol);
    if (i < row.b.length && row.b[i] <= t + tol) return { lane, b: row.b[i], e: row.e[i], loc: row.loc[i] };
    return null;
  }
  return null;
}

let drag = null;
tl.addEventListener("wheel", e => {
  e.preventDefault();
  const t = tOf(e.offsetX), f = Math.exp(e.deltaY * 0.0015);
  setView(t - (t - v0) * f, t + (v1 - t) * f);
}, { passive: false });
tl.addEventListener("mousedown", e => { drag = { x: e.clientX, v0, v1 }; tl.style.cursor = "grabbing"; });
window.addEventListener("mouseup", () => { drag = null; tl.style.cursor = ""; });
window.addEventListener("mousemove", e => {
  if (!drag) return;
  const dt = (e.clientX - drag.x) / plotW() * (drag.v1 - drag.v0);
  setView(drag.v0 - dt, drag.v1 - dt);
});
tl.addEventListener("mousemove", e => {
  const h = drag ? null : hit(e.offsetX, e.offsetY);
  if (!h) { tip.style.display = "none"; return; }
  const act = ACT[D.location_activity[h.loc]], cat = D.categories[h.loc];
  tip.textContent = D.names[h.loc] + "\n" + fmtDur(h.e - h.b) + "  at " + fmtDur(h.b) + "\ncategory: " +
    (cat || "(none)") + "  \u2192  " + LABEL[act] + "\n" + h.lane.track.name;
  tip.style.display = "block";
  tip.style.left = Math.min(e.offsetX + 14, tl.clientWidth - 260) + "px";
  tip.style.top = (e.offsetY + 14) + "px";
});
tl.addEventListener("mouseleave", () => { tip.style.display = "none"; });
tl.addEventListener("dblclick", e => {
  const h = hit(e.offsetX, e.offsetY);
  if (h) { const pad = (h.e - h.b) * 0.05 + 100; setView(h.b - pad, h.e + pad); }
});
document.getElementById("reset").addEventListener("click", () => setView(0, WALL));

const strip = document.getElementById("strip");
function drawStrip() {
  const H = 90, g = sizeCanvas(strip, H), W = strip.clientWidth, bins = D.strip.ns;
  g.clearRect(0, 0, W, H);
  const bw = W / bins.length;
  bins.forEach((ns, i) => {
    const sum = ns.reduce((a, b) => a + b, 0);
    if (sum === 0) return;
    let yy = H;
    ns.forEach((v, a) => {
      const h = v / sum * H;
      g.fillStyle = COLORS[ACT[a]];
      g.fillRect(i * bw, yy - h, Math.ceil(bw), h);
      yy -= h;
    });
  });
  const x0 = v0 / WALL * W, x1 = v1 / WALL * W;
  g.fillStyle = "rgba(0,0,0,0.18)";
  g.fillRect(0, 0, x0, H); g.fillRect(x1, 0, W - x1, H);
  g.strokeStyle = "#000"; g.strokeRect(x0 + 0.5, 0.5, Math.max(x1 - x0 - 1, 1), H - 1);
}
strip.addEventListener("click", e => {
  const t = e.offsetX / strip.clientWidth * WALL, half = (v1 - v0) / 2;
  setView(t - half, t + half);
});

function fillTables() {
  document.getElementById("meta").textContent = "wall " + fmtDur(S.wall_ns) + " \u00b7 " + S.threads.length +
    " threads \u00b7 " + D.zones_total + " zones \u00b7 " + S.overhead.counters + " counter samples";
  document.getElementById("verdict").textContent = "Verdict: " + S.verdict;
  if (D.zones_kept < D.zones_total) {
    const n = document.getElementById("decimated");
    n.hidden = false;
    n.textContent = "The timeline shows the " + D.zones_kept + " longest of " + D.zones_total + " zones (" +
      fmtDur(D.min_kept_ns) + " and longer); the tables and the activity strip count them all.";
  }
  const legend = document.getElementById("legend");
  for (const a of ACT) {
    const s = el("span"), i = el("i");
    i.style.background = COLORS[a];
    s.append(i, LABEL[a]);
    legend.append(s);
  }
  const split = document.getElementById("split"), head = el("tr");
  for (const h of ["thread", "lifetime", ...ACT.map(a => LABEL[a])]) head.append(el("th", h));
  split.append(head);
  const splitRow = (name, sp) => {
    const tr = el("tr"), total = ACT.reduce((s, a) => s + sp[a], 0);
    tr.append(el("td", name), el("td", fmtDur(total)));
    for (const a of ACT) {
      const share = total ? sp[a] / total : 0, td = el("td", pct(share)), bar = el("span", undefined, "share");
      bar.style.width = Math.round(40 * share) + "px"; bar.style.background = COLORS[a];
      td.append(bar); tr.append(td);
    }
    split.append(tr);
  };
  for (const t of S.threads) splitRow(t.name, t.split);
  splitRow("all threads", S.split);
  const stages = document.getElementById("stages"), sh = el("tr");
  for (const h of ["stage", "activity", "count", "total", "self", "mean", "p50", "p99", "max", "share"]) sh.append(el("th", h));
  stages.append(sh);
  for (const st of S.stages) {
    const tr = el("tr"), name = el("td", st.name, "name"), act = el("td"), dot = el("span", undefined, "dot");
    name.title = st.name;
    dot.style.background = COLORS[st.activity];
    act.append(dot, LABEL[st.activity]);
    tr.append(name, act, el("td", String(st.count)));
    for (const k of ["total_ns", "self_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns"]) tr.append(el("td", fmtDur(st[k])));
    tr.append(el("td", pct(st.share)));
    stages.append(tr);
  }
  fillGpu();
  fillLayers();
  fillCounters();
  const o = S.overhead, thread = ACT.reduce((s, a) => s + S.split[a], 0);
  document.getElementById("overhead").textContent = (o.zones + o.counters) + " events \u00d7 " +
    o.ns_per_event.toFixed(0) + " ns (measured at start) = " + fmtDur(o.estimated_ns) + ", " +
    (thread ? (100 * o.estimated_ns / thread).toFixed(3) : "0") + "% of thread time; " + o.dropped_zones +
    " zones and " + o.dropped_counters + " counter samples dropped by the recorder.";
}

function table(id, headers, rows) {
  const t = document.getElementById(id), h = el("tr");
  for (const x of headers) h.append(el("th", x));
  t.append(h);
  for (const r of rows) {
    const tr = el("tr");
    r.forEach((x, i) => tr.append(el("td", x, i === 0 ? "name" : undefined)));
    t.append(tr);
  }
}

function fillGpu() {
  const g = S.gpu;
  if (!g || !g.present) return;
  document.getElementById("gpu-section").hidden = false;
  const span = g.span_ns || 1, t = g.time;
  document.getElementById("gpu-line").textContent = "busy " + pct(g.busy_ns / span) +
    " of the wall (union over streams); idle: sync " + pct(t.sync_ns / span) + ", in CUDA calls " +
    pct(t.in_calls_ns / span) + ", CPU not submitting " + pct(t.not_submitting_ns / span) + "; " +
    g.counts.kernels + " kernels, " + g.counts.copies + " copies, " + g.counts.dropped + " records dropped";
  table("kernels", ["kernel", "count", "total", "mean", "min", "max"],
        g.top_kernels.map(k => [k.name, String(k.count), fmtDur(k.total_ns), fmtDur(k.mean_ns), fmtDur(k.min_ns), fmtDur(k.max_ns)]));
  table("copies", ["copy", "count", "bytes", "total", "GB/s"],
        g.copies.map(c => [c.kind, String(c.count), String(c.bytes), fmtDur(c.total_ns), c.gb_per_s.toFixed(2)]));
  const busy = g.busy_ns || 1;
  table("gpu-stages", ["launched in", "ops", "kernels", "copies", "share of GPU busy"],
        (g.by_stage || []).map(st => [st.stage, String(st.ops), fmtDur(st.kernel_ns), fmtDur(st.copy_ns),
                                      pct((st.kernel_ns + st.copy_ns) / busy)]));
}

function fillLayers() {
  if (!S.layers || S.layers.length === 0) return;
  document.getElementById("layer-section").hidden = false;
  table("layers", ["layer", "forward", "backward", "cpu side", "GPU"],
        S.layers.map(r => [r.layer, fmtDur(r.forward_ns), fmtDur(r.backward_ns), fmtDur(r.cpu_side_ns),
                           fmtDur(r.gpu_ns)]));
}

function fillCounters() {
  if (!S.counters || S.counters.length === 0) return;
  document.getElementById("counter-section").hidden = false;
  const f = v => Number(v.toPrecision(4)).toString();
  table("counters", ["counter", "samples", "min", "mean", "max", "last"],
        S.counters.map(c => [c.name, String(c.samples), f(c.min), f(c.mean), f(c.max), f(c.last)]));
}

fillTables();
draw();
drawStrip();
window.addEventListener("resize", () => { draw(); drawStrip(); });
document.body.dataset.lanes = String(lanes.length);
if (window.tandemErrors.length === 0) document.body.dataset.status = "ok";
})();
</script>
</body></html>
)HTML";

}  // namespace

std::string report_html(const Trace& trace, const ProfileSummary& s, const ReportOptions& options) {
  std::string page = kHead;
  page += "<script type=\"application/json\" id=\"tandem-data\">";
  page += report_data(trace, s, options);
  page += "</script>";
  page += kScript;
  return page;
}

}  // namespace tandem::profile
