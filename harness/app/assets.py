"""The app's stylesheet and script, served from `/assets/` (the Content-Security-Policy
forbids inline ones). The stylesheet is the HTML report's plus the app's own rules; the run
page loads the report's script unchanged.

The app script builds nothing from data with `innerHTML`: it sends writes (JSON, with the
token header), shows their answer as text, and drives the keyboard of the Review queue.
"""

from __future__ import annotations

from ..reports.html.assets import CSS as REPORT_CSS
from ..reports.html.assets import SCRIPT as REPORT_SCRIPT

__all__ = ["ASSETS"]

APP_CSS = """
.appnav{display:flex;gap:18px;padding:10px 0;border-bottom:1px solid var(--line);margin-bottom:8px}
.appnav a{text-decoration:none;font-weight:600}
.appnav a[aria-current=page]{color:var(--fg);border-bottom:3px solid var(--rev)}
.flash{position:sticky;top:0;background:#ddf4ff;border:1px solid #54aeff;padding:6px 10px;
border-radius:6px;z-index:2}.flash.bad{background:#ffebe9;border-color:var(--fail)}
.v-ungraded,.v-exit{background:#6e7781}
.running{color:var(--rev);font-weight:600;margin-left:6px}
.trend-box{margin:0}.trend-box figcaption{font-weight:600}
.chart.trend{width:420px}.chart .line{fill:none;stroke-width:2}
.chart .line.rate{stroke:var(--pass)}.chart .line.comp{stroke:var(--rev)}
.chart .dot.rate{fill:var(--pass)}.chart .dot.comp{fill:var(--rev)}
.chart .legend.rate{fill:var(--pass)}.chart .legend.comp{fill:var(--rev)}
.chart .tick-r{text-anchor:end;fill:var(--muted)}
.actions{margin:8px 0}
.review-grid{display:grid;grid-template-columns:minmax(0,3fr) minmax(280px,2fr);gap:16px}
@media (max-width:900px){.review-grid{grid-template-columns:1fr}}
.item{border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:8px 0}
.item.current{border-color:var(--rev);box-shadow:inset 4px 0 0 var(--rev)}
.item.done{opacity:.65}
kbd{border:1px solid var(--line);border-bottom-width:2px;border-radius:4px;padding:0 4px;
font-size:12px;background:var(--soft)}
.editor textarea{width:100%;min-height:18em;font-family:ui-monospace,Menlo,Consolas,monospace;
font-size:13px}
.editor fieldset{border:1px solid var(--line);border-radius:6px;margin:8px 0}
.editor label{display:block;margin:6px 0}.editor input[type=text]{width:100%}
.errors{color:var(--fail)}.errors li{margin:2px 0}
.inline{display:inline}
aside label{display:block;margin:8px 0}aside input[type=text]{width:100%}
table.compare{border-collapse:collapse;width:100%;margin:8px 0}
table.compare th,table.compare td{border-bottom:1px solid var(--line);padding:4px 8px;
text-align:left;vertical-align:top}table.compare thead th{background:var(--soft)}
td.ops button{margin:0 2px}
tr.disabled td{color:var(--muted)}
"""

APP_SCRIPT = r"""
(function () {
"use strict";
function token() {
  var m = /(?:^|;\s*)tracegrade_token=([^;]*)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : "";
}
var flash = document.getElementById("flash");
function say(text, bad) {
  if (!flash) return;
  flash.textContent = text;
  flash.className = "flash" + (bad ? " bad" : "");
  flash.hidden = false;
}
/* Every write: JSON in, JSON out ({ok, message, problems, redirect}); the token as a header. */
function send(method, path, body) {
  return fetch(path, {method: method, credentials: "same-origin",
    headers: {"content-type": "application/json", "x-tracegrade-token": token()},
    body: body === undefined ? undefined : JSON.stringify(body)}).then(function (r) {
      return r.text().then(function (t) {
        var data;
        try { data = JSON.parse(t); } catch (err) { data = {message: t}; }
        data.status = r.status;
        return data;
      });
    });
}
window.tgSend = send;
window.tgSay = say;
function problemsList(el, problems) {
  el.replaceChildren();
  (problems || []).forEach(function (p) {
    var li = document.createElement("li");
    li.textContent = p;
    el.append(li);
  });
  el.hidden = !(problems && problems.length);
}
window.tgProblems = problemsList;
/* Buttons and forms that write: data-method, data-path, data-body (JSON), data-confirm. */
document.addEventListener("click", function (ev) {
  var b = ev.target.closest ? ev.target.closest("button[data-path]") : null;
  if (!b) return;
  ev.preventDefault();
  if (b.dataset.confirm && !window.confirm(b.dataset.confirm)) return;
  var body = b.dataset.body ? JSON.parse(b.dataset.body) : {};
  send(b.dataset.method || "POST", b.dataset.path, body).then(function (d) {
    if (d.status >= 400) { say(d.message || ("error " + d.status), true); return; }
    if (d.redirect) { location.href = d.redirect; return; }
    location.reload();
  });
});
document.addEventListener("submit", function (ev) {
  var f = ev.target;
  if (!f.dataset || !f.dataset.path) return;
  ev.preventDefault();
  var body = {};
  Array.prototype.forEach.call(f.elements, function (el) {
    if (!el.name || el.disabled) return;
    body[el.name] = el.type === "checkbox" ? el.checked : el.value;
  });
  var errs = f.querySelector(".errors");
  send(f.dataset.method || "POST", f.dataset.path, body).then(function (d) {
    if (errs) problemsList(errs, d.problems);
    if (d.status >= 400) { say(d.message || ("error " + d.status), true); return; }
    if (d.redirect) { location.href = d.redirect; return; }
    if (d.revision && f.elements.revision) f.elements.revision.value = d.revision;
    say(d.message || "saved");
  });
});
/* Run page: the Review queue link lands on the question being viewed (#q=<target>/<id>). */
var reviewLink = document.querySelector("a[data-review-link]");
if (reviewLink) {
  var queueHref = reviewLink.getAttribute("href");
  var followQuestion = function () {
    var m = /^#q=([^/]*)\/([^/]*)(?:\/(\d+))?$/.exec(location.hash);
    reviewLink.href = m ? queueHref + "&target=" + m[1] + "&question=" + m[2] + "&trial=" +
      (m[3] || 0) : queueHref;
  };
  window.addEventListener("hashchange", followQuestion);
  followQuestion();
}
/* Runs page: a running run's progress, polled while it runs. */
var running = document.querySelectorAll("[data-progress]");
if (running.length) {
  var poll = function () {
    fetch("/api/progress", {credentials: "same-origin"}).then(function (r) { return r.json(); })
      .then(function (d) {
        var left = 0;
        running.forEach(function (el) {
          var p = d[el.dataset.progress];
          if (!p) return;
          el.textContent = p.running ? "running: " + p.done + " of " + (p.total || "?") +
            " question(s)" : "finished: reload for its verdict";
          if (p.running) left++;
        });
        if (left) setTimeout(poll, 2000);
      });
  };
  setTimeout(poll, 2000);
}
/* Review queue: keyboard-driven (j/k next and previous question, p pass, f fail, n note). */
var review = document.getElementById("review");
if (review) {
  var items = Array.prototype.slice.call(review.querySelectorAll(".item[data-label]"));
  var cur = items.findIndex(function (i) { return !i.classList.contains("done"); });
  var note = document.getElementById("note");
  var mark = function () {
    items.forEach(function (it, i) { it.classList.toggle("current", i === cur); });
    if (items[cur]) items[cur].scrollIntoView({block: "nearest"});
  };
  var decide = function (answer) {
    var it = items[cur];
    if (!it) { say("nothing left to decide on this question: j for the next one"); return; }
    send("POST", "/api/label", {run: review.dataset.run, target: review.dataset.target,
      question: review.dataset.question, trial: Number(review.dataset.trial),
      label: it.dataset.label, answer: answer, note: note.value || null}).then(function (d) {
        if (d.status >= 400) { say(d.message, true); return; }
        it.classList.add("done");
        it.querySelector(".state").textContent = d.message;
        note.value = "";
        say(d.message);
        var next = items.findIndex(function (x) { return !x.classList.contains("done"); });
        if (next < 0) { location.href = review.dataset.after; return; }
        cur = next; mark();
      });
  };
  review.querySelectorAll("button[data-answer]").forEach(function (b) {
    b.addEventListener("click", function () {
      cur = items.indexOf(b.closest(".item"));
      decide(b.dataset.answer === "pass");
    });
  });
  document.addEventListener("keydown", function (ev) {
    var typing = /^(INPUT|SELECT|TEXTAREA)$/.test((ev.target || {}).tagName || "");
    if (typing) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "p") decide(true);
    else if (ev.key === "f") decide(false);
    else if (ev.key === "n") { ev.preventDefault(); note.focus(); }
    else if (ev.key === "j") location.href = review.dataset.next;
    else if (ev.key === "k" && review.dataset.prev) location.href = review.dataset.prev;
    else return;
  });
  mark();
}
})();
"""

ASSETS = {
    "app.css": ("text/css", REPORT_CSS + APP_CSS),
    "report.js": ("text/javascript", REPORT_SCRIPT),
    "app.js": ("text/javascript", APP_SCRIPT),
}
"""What `/assets/NAME` serves: (content type, text)."""
