"""The HTML report's stylesheet and script, inlined into every page (no file to fetch).

The script builds every element with `textContent` (never `innerHTML` with run data), so an
answer or a tool result that holds markup is shown as text, never run.
"""

from __future__ import annotations

from .view import PAUSE_CSS, VIEW_SCRIPT

__all__ = ["CSS", "SCRIPT"]

CSS = (
    """
:root{--fg:#1b1f24;--muted:#57606a;--bg:#fff;--line:#d0d7de;--soft:#f6f8fa;
--pass:#1a7f37;--fail:#cf222e;--err:#8250df;--deg:#9a6700;--rev:#0969da}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1200px;padding:0 16px 48px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{white-space:pre-wrap;word-break:break-word;background:var(--soft);padding:8px;
border-radius:6px;margin:4px 0}
h1{font-size:24px;margin:16px 0 4px}h2{font-size:20px;margin:24px 0 6px}
h3{font-size:16px;margin:16px 0 6px}
a{color:#0550ae}[tabindex="-1"]:focus{outline:none}
.grid td.score{white-space:nowrap}a:focus,button:focus,input:focus,select:focus,summary:focus{
outline:3px solid #0969da;outline-offset:1px}
.skip{position:absolute;left:-999px}.skip:focus{left:16px;top:8px;background:#fff;padding:4px}
.muted,.mode{color:var(--muted);font-weight:normal}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
color:#fff;vertical-align:middle}
.badge.big{font-size:15px;padding:3px 12px}
.v-passed{background:var(--pass)}.v-failed{background:var(--fail)}
.v-errored{background:var(--err)}.v-degraded{background:var(--deg)}
.v-review{background:var(--rev)}.v-incomplete{background:var(--deg)}
.v-skipped{background:#6e7781}.v-scored{background:#57606a}
.reasons li{color:var(--fail)}
.advisory{border-left:4px solid var(--deg);background:#fff8c5;padding:6px 10px;margin:6px 0}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}
.kv dt{color:var(--muted)}.kv dd{margin:0;word-break:break-all}
table.grid{border-collapse:collapse;margin:8px 0;width:100%}
.grid caption{text-align:left;color:var(--muted);padding:2px 0}
.grid th,.grid td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;
vertical-align:top}
.grid th{background:var(--soft)}
.grid tbody tr:hover{background:#f3f8ff}
.charts{display:flex;flex-wrap:wrap;gap:24px}
.chart{width:360px;max-width:100%;height:auto}
.chart .bar{fill:var(--pass)}.chart .bar.low{fill:#d1242f}.chart .bar.hist{fill:#54aeff}
.chart .track{fill:#eaeef2}.chart .axis{stroke:var(--line)}
.chart text{font-size:11px;fill:var(--fg)}.chart .num{text-anchor:middle}
.chart .tick{text-anchor:middle;fill:var(--muted)}.chart .label{text-anchor:middle;fill:var(--muted)}
.controls{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:end;background:var(--soft);
padding:10px;border-radius:6px}
.controls label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
.controls input,.controls select{font:inherit;padding:3px 6px;min-width:9em}
.controls input[type=search]{min-width:16em}
button{font:inherit;padding:3px 10px;cursor:pointer}
.pager{display:flex;gap:8px;align-items:center;margin:8px 0}
.status{margin:8px 0;color:var(--muted)}
.qtable td.num,.qtable th.num{text-align:right}
.tags span{display:inline-block;background:#ddf4ff;border-radius:8px;padding:0 6px;
margin:0 2px 2px 0;font-size:12px}
.qhead{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
.trace input{width:22em}
.msg{margin:6px 0}.msg .role{font-weight:600;color:var(--muted);font-size:12px;
text-transform:uppercase}
.timeline-wrap{display:grid;grid-template-columns:minmax(0,2fr) minmax(240px,1fr);gap:16px}
@media (max-width:800px){.timeline-wrap{grid-template-columns:1fr}}
ol.calls{list-style:none;padding-left:0;margin:0}
ol.calls ol.calls{padding-left:22px;border-left:3px solid #c8e1ff;margin:6px 0 0 6px}
li.call{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:6px 0}
li.call.broken{border-color:var(--fail);box-shadow:inset 4px 0 0 var(--fail)}
.call-head{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:center}
.path{margin:0 0 8px;font-size:13px}.call-head .node{color:var(--muted);font-size:12px}
.call-head .seq{font-weight:700}.call-head .turn,.call-head .agent{color:var(--muted);
font-size:12px}
.o-ok{background:var(--pass)}.o-error,.o-not_executed{background:var(--fail)}
.o-interrupted,.o-cancelled,.o-handoff,.o-command{background:var(--deg)}
.o-declined{background:var(--muted)}
.badge.world{background:var(--muted);font-style:italic}
"""
    + PAUSE_CSS
    + """
.args{display:grid;grid-template-columns:max-content 1fr;gap:0 10px;margin:4px 0}
.args dt{color:var(--muted)}.args dd{margin:0;word-break:break-word}
.mark{display:block;font-size:13px;margin:2px 0;padding:1px 6px;border-radius:4px}
.mark.ok{background:#dafbe1;color:#116329}.mark.bad{background:#ffebe9;color:#a40e26;
font-weight:600}
aside.expect{border:1px solid var(--line);border-radius:6px;padding:8px 12px;align-self:start}
aside.expect ul{padding-left:0;list-style:none;margin:0}
aside.expect li{margin:6px 0;padding:4px 6px;border-radius:4px}
aside.expect li.unmet{background:#ffebe9}aside.expect li.met{background:#dafbe1}
.why{display:block;font-size:13px;color:#a40e26}
.judge-id{display:block;font-size:12px;color:#57606a;margin-top:2px}
.checks{margin:4px 0 12px}
"""
)

SCRIPT = (
    r"""
(function () {
"use strict";
var DATA = JSON.parse(document.getElementById("tg-data").textContent);
/* The questions come in blocks of rows after this script (`tg-rows` elements, worst first),
   so the first rows are drawn while the rest is still read; DATA.total says how many. */
var QS = [];
var TOTAL = DATA.total === undefined ? (DATA.questions || []).length : DATA.total;
var LOADED = false;
var PAGE = 100;
var RANK = {errored: 0, degraded: 1, failed: 2, review: 3, passed: 4};
var listRoot = document.getElementById("list-root");
var listSection = document.getElementById("questions");
var qSection = document.getElementById("question");
var qRoot = document.getElementById("question-root");
var summary = document.getElementById("summary");
var targets = document.querySelectorAll("section.target");

function h(tag, attrs) {
  var el = document.createElement(tag);
  if (attrs) {
    for (var k in attrs) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") el.textContent = v;
      else if (k === "cls") el.className = v;
      else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : v);
    }
  }
  for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
  return el;
}
function add(el, c) {
  if (c === null || c === undefined || c === false) return;
  if (Array.isArray(c)) { c.forEach(function (x) { add(el, x); }); return; }
  el.append(c);
}
function fmt(x) {
  if (x === null || x === undefined) return "-";
  if (Number.isInteger(x)) return String(x);
  return x.toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
}
function repr(v) {
  if (typeof v === "string") return "'" + v + "'";
  return JSON.stringify(v);
}
/* #q=<target>/<id>, and /<trial> after it for a repeated question's later trials */
function key(q) {
  return encodeURIComponent(q.target) + "/" + encodeURIComponent(q.id) +
    (q.trial ? "/" + q.trial : "");
}
var byKey = {};
var TRIALS = false;
function takeIn(list) {
  list.forEach(function (q) {
    q._i = q.i === undefined ? QS.length : q.i;  /* run order, whatever order they came in */
    if (q.trial) TRIALS = true;
    byKey[q.target + "\u0000" + q.id + "\u0000" + (q.trial || 0)] = q;
    QS.push(q);
  });
}
takeIn(DATA.questions || []);
var blocksTaken = 0;
/* Every block the browser has read whole (the element after it exists), or all at the end. */
function takeBlocks(all) {
  var blocks = document.getElementsByClassName("tg-rows");
  var took = false;
  while (blocksTaken < blocks.length) {
    var el = blocks[blocksTaken];
    if (!all && !el.nextSibling) break;
    takeIn(JSON.parse(el.textContent));
    blocksTaken++;
    took = true;
  }
  return took;
}
function lookup(hash) {
  var m = /^#q=([^/]*)\/([^/]*)(?:\/(\d+))?$/.exec(hash);
  if (!m) return null;
  try {
    return byKey[decodeURIComponent(m[1]) + "\u0000" + decodeURIComponent(m[2]) + "\u0000" +
      (m[3] || 0)] || null;
  } catch (err) { return null; }
}
function label(q) { return TRIALS ? q.id + " (trial " + (q.trial || 0) + ")" : q.id; }
function haystack(q) {
  if (q._hay === undefined) {
    var parts = [q.id, q.target, q.split || "", q.bundle || "", q.tags.join(" "), q.verdict,
      q.response || "", q.error || "", q.trace_id || ""];
    q.input.forEach(function (m) { parts.push(m.content); });
    q.graders.forEach(function (g) { parts.push(g.id, g.reason); });
    q.calls.forEach(function (c) { parts.push(c.q); });
    q._hay = parts.join("\n").toLowerCase();
  }
  return q._hay;
}
function distinct(f) {
  var seen = {};
  QS.forEach(function (q) { f(q).forEach(function (v) { if (v) seen[v] = 1; }); });
  return Object.keys(seen).sort();
}

/* ---- the list ---- */
var state = {verdict: "", target: "", split: "", bundle: "", tag: "", text: "", sort: "worst",
  page: 0};
var controls = {};
function select(name, label, values, words) {
  var s = h("select", {id: "f-" + name, name: name,
    onchange: function () { state[name] = s.value; state.page = 0; renderList(); }});
  controls[name] = s;
  fillSelect(name, values, words);
  return h("label", {"for": "f-" + name}, label, s);
}
function fillSelect(name, values, words) {
  var s = controls[name];
  s.replaceChildren(h("option", {value: "", text: "all"}));
  values.forEach(function (v) { s.append(h("option", {value: v, text: words ? words[v] : v})); });
  s.value = state[name];
}
var VERDICT_ORDER = ["failed", "errored", "degraded", "review", "passed"];
function verdictWords() {
  var counts = {};
  QS.forEach(function (q) { counts[q.verdict] = (counts[q.verdict] || 0) + 1; });
  var words = {};
  VERDICT_ORDER.forEach(function (v) { words[v] = v + " (" + (counts[v] || 0) + ")"; });
  return words;
}
/* The choices once every block is in (the first ones saw only the rows read so far). */
function refillControls() {
  fillSelect("verdict", VERDICT_ORDER, verdictWords());
  fillSelect("split", distinct(function (q) { return [q.split]; }));
  fillSelect("bundle", distinct(function (q) { return [q.bundle]; }));
  fillSelect("tag", distinct(function (q) { return q.tags; }));
}
function buildControls() {
  var verdicts = VERDICT_ORDER;
  var words = verdictWords();
  var text = h("input", {type: "search", id: "f-text", placeholder: "id, answer, reason, tool",
    oninput: function () { state.text = text.value.trim().toLowerCase(); state.page = 0;
      renderList(); }});
  controls.text = text;
  var sort = h("select", {id: "f-sort", onchange: function () { state.sort = sort.value;
    state.page = 0; renderList(); }},
    h("option", {value: "worst", text: "worst first"}),
    h("option", {value: "composite-asc", text: "composite, low to high"}),
    h("option", {value: "composite-desc", text: "composite, high to low"}),
    h("option", {value: "cost", text: "cost, highest first"}),
    h("option", {value: "latency", text: "latency, slowest first"}),
    h("option", {value: "order", text: "run order"}),
    h("option", {value: "id", text: "question id"}));
  controls.sort = sort;
  var form = h("form", {cls: "controls", role: "search", "aria-label": "Filter the questions",
      onsubmit: function (e) { e.preventDefault(); }},
    select("verdict", "Verdict", verdicts, words),
    select("target", "Target", DATA.targets),
    select("split", "Split", distinct(function (q) { return [q.split]; })),
    select("bundle", "Bundle", distinct(function (q) { return [q.bundle]; })),
    select("tag", "Tag", distinct(function (q) { return q.tags; })),
    h("label", {"for": "f-text"}, "Search", text),
    h("label", {"for": "f-sort"}, "Sort", sort));
  return form;
}
function filtered() {
  var out = QS.filter(function (q) {
    if (state.verdict && q.verdict !== state.verdict) return false;
    if (state.target && q.target !== state.target) return false;
    if (state.split && q.split !== state.split) return false;
    if (state.bundle && q.bundle !== state.bundle) return false;
    if (state.tag && q.tags.indexOf(state.tag) < 0) return false;
    if (state.text && haystack(q).indexOf(state.text) < 0) return false;
    return true;
  });
  var comp = function (q, dflt) { return q.composite === null ? dflt : q.composite; };
  var desc = function (k) { return function (a, b) { return (b[k] === null ? -1 : b[k]) -
    (a[k] === null ? -1 : a[k]) || a._i - b._i; }; };  /* unknown or unpriced: last, never 0 */
  var sorters = {
    worst: function (a, b) { return RANK[a.verdict] - RANK[b.verdict] ||
      comp(a, 6) - comp(b, 6) || a._i - b._i; },
    "composite-asc": function (a, b) { return comp(a, 6) - comp(b, 6) || a._i - b._i; },
    "composite-desc": function (a, b) { return comp(b, -1) - comp(a, -1) || a._i - b._i; },
    cost: desc("cost_value"), latency: desc("latency"),
    order: function (a, b) { return a._i - b._i; },
    id: function (a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : a._i - b._i; }
  };
  return out.sort(sorters[state.sort]);
}
var statusEl = h("p", {cls: "status", role: "status", "aria-live": "polite", id: "list-status"});
var tableBody = h("tbody");
var pager = h("nav", {cls: "pager", "aria-label": "Pages of questions"});
function row(q) {
  var tags = h("span", {cls: "tags"});
  q.tags.forEach(function (t) { tags.append(h("span", {text: t})); });
  return h("tr", {"data-q": q.id, "data-target": q.target},
    h("td", null, h("a", {href: "#q=" + key(q), cls: "qlink"}, h("code", {text: label(q)}))),
    h("td", null, q.target),
    h("td", null, h("span", {cls: "badge v-" + q.verdict, text: q.verdict})),
    h("td", {cls: "num"}, fmt(q.composite)),
    h("td", null, q.split || "-"), h("td", null, q.bundle || "-"), h("td", null, tags),
    h("td", {cls: "num"}, q.record === "present" ? String(q.calls.length) : "-"),
    h("td", {cls: "num"}, q.tokens), h("td", {cls: "num"}, q.cost), h("td", {cls: "num"},
      q.latency === null ? "-" : fmt(q.latency) + " s"));
}
function renderList() {
  var rows = filtered();
  var pages = Math.max(1, Math.ceil(rows.length / PAGE));
  if (state.page >= pages) state.page = pages - 1;
  var start = state.page * PAGE;
  var shown = rows.slice(start, start + PAGE);
  tableBody.replaceChildren.apply(tableBody, shown.map(row));
  statusEl.textContent = rows.length + " of " + QS.length + " questions" +
    (rows.length > PAGE ? ", showing " + (start + 1) + "–" + (start + shown.length) : "") +
    (LOADED ? "" : " (" + QS.length + " of " + TOTAL + " read so far)");
  listRoot.setAttribute("aria-busy", LOADED ? "false" : "true");
  pager.replaceChildren();
  if (pages > 1) {
    pager.append(
      h("button", {type: "button", disabled: state.page === 0, text: "Previous page",
        onclick: function () { state.page--; renderList(); }}),
      h("span", {text: "page " + (state.page + 1) + " of " + pages}),
      h("button", {type: "button", disabled: state.page >= pages - 1, text: "Next page",
        onclick: function () { state.page++; renderList(); }}));
  }
}
function buildList() {
  var sortBy = function (c) { return h("button", {type: "button", text: c, title: "sort by " +
    c, onclick: function () { state.sort = controls.sort.value = c; renderList(); }}); };
  var head = h("thead", null, h("tr", null, ["question", "target", "verdict", "composite",
    "split", "bundle", "tags", "calls", "tokens", "cost", "latency"].map(function (c, i) {
      return h("th", {scope: "col", "data-col": c, cls: i === 3 || i >= 7 ? "num" : null},
        c === "cost" || c === "latency" ? sortBy(c) : c); })));
  var table = h("table", {cls: "grid qtable", id: "question-table"},
    h("caption", {text: "Questions (arrow keys move between rows; / focuses the search)"}),
    head, tableBody);
  table.addEventListener("keydown", function (e) {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    var links = Array.prototype.slice.call(tableBody.querySelectorAll("a.qlink"));
    var i = links.indexOf(document.activeElement);
    if (i < 0) return;
    var next = links[i + (e.key === "ArrowDown" ? 1 : -1)];
    if (next) { next.focus(); e.preventDefault(); }
  });
  listRoot.append(buildControls(), statusEl, table, pager);
  renderList();
}

"""
    + VIEW_SCRIPT
    + r"""
/* ---- routing: #q=<target>/<id> shows one question, anything else the summary and list ---- */
function route() {
  var q = lookup(location.hash);
  var showQ = !!q;
  summary.hidden = showQ;
  listSection.hidden = showQ;
  for (var i = 0; i < targets.length; i++) targets[i].hidden = showQ;
  qSection.hidden = !showQ;
  if (showQ) {
    renderQuestion(q);
    document.title = q.id + " · tracegrade run " + DATA.run_id;
    document.getElementById("question-h").focus();
    window.scrollTo(0, 0);
  } else if (location.hash === "#questions") {
    document.getElementById("questions-h").focus();
  }
}
document.addEventListener("keydown", function (e) {
  var typing = /^(INPUT|SELECT|TEXTAREA)$/.test((e.target || {}).tagName || "");
  if (e.key === "/" && !typing && qSection.hidden) {
    e.preventDefault(); controls.text.focus();
  } else if (e.key === "Escape" && !qSection.hidden) {
    location.hash = "#questions";
  }
});
takeBlocks(false);
buildList();
window.addEventListener("hashchange", route);
route();
/* More blocks: redraw the list at most every 100 ms while they come, once more at the end. */
var redraw = null;
function later() {
  if (redraw !== null) return;
  redraw = setTimeout(function () {
    redraw = null;
    if (!LOADED) { renderList(); if (qSection.hidden && lookup(location.hash)) route(); }
  }, 100);
}
function finish() {
  if (LOADED) return;
  takeBlocks(true);
  LOADED = true;
  listRoot.setAttribute("data-loaded", "true");
  refillControls();
  renderList();
  if (qSection.hidden) route();
}
if (document.readyState === "loading") {
  new MutationObserver(function () { if (takeBlocks(false)) later(); })
    .observe(document.body, {childList: true});
  document.addEventListener("DOMContentLoaded", finish);
} else {
  finish();
}
})();
"""
)
