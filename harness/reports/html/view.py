"""The HTML report's view of one question, as its script draws it: the head, input, answer,
graders and their checks, labels, and the tool-call timeline with each call's expectation
marks, nested sub-agent calls and the pauses on LangGraph's `interrupt()` (an approval step, a
question back to the user: where it fell, what it asked and the answer given, or that nobody
answered). Inlined into `assets.SCRIPT` (inside its closure: it uses the page's `h`,
`fmt`, `repr` and `DATA`)."""

from __future__ import annotations

__all__ = ["PAUSE_CSS", "VIEW_SCRIPT"]

PAUSE_CSS = """
li.call.pause{border-style:dashed;border-color:var(--deg);background:var(--soft)}
li.call.pause .asked,li.call.pause .answer{font-size:13px;color:var(--muted);margin:4px 0 0}
"""

PAUSE_SCRIPT = r"""
function fields(values) {
  var keys = Object.keys(values || {});
  if (!keys.length) return h("p", {cls: "muted", text: "(empty)"});
  var list = h("dl", {cls: "args"});
  keys.forEach(function (k) {
    list.append(h("dt", {text: k}), h("dd", null, h("code", {text: repr(values[k])})));
  });
  return list;
}
function pauseItem(p) {
  var who = p.tool ? p.node + " (tool " + p.tool + ")" : p.node;
  return h("li", {cls: "call pause", "data-pause": p.node},
    h("div", {cls: "call-head"},
      h("span", {cls: "badge o-interrupted", text: "paused: interrupt()"}),
      h("span", {text: "asked by " + who}),
      h("span", {cls: "agent", text: "agent " + p.agent})),
    h("p", {cls: "asked", text: "asked"}), fields(p.payload),
    p.resumed ? [h("p", {cls: "answer", text: "answered"}), fields(p.answer)] :
      h("p", {cls: "advisory", text: "not answered: the question ended waiting on it"}));
}
function withPauses(q, top) {
  /* each pause goes before the first top-level call that started after it */
  var items = top.slice();
  (q.pauses || []).slice().reverse().forEach(function (p) {
    var at = items.findIndex(function (x) { return x.c && x.i >= p.at; });
    var entry = {el: pauseItem(p)};
    if (at < 0) items.push(entry); else items.splice(at, 0, entry);
  });
  return items;
}
"""

VIEW_SCRIPT = (
    r"""
/* ---- one question ---- */
function section(title, id) {
  return h("section", {"aria-labelledby": id}, h("h3", {id: id, text: title}));
}
function traceBox(q) {
  if (!q.trace_id) return h("span", {cls: "muted", text: "no trace id"});
  if (q.trace_url) {
    return h("a", {href: q.trace_url, rel: "noreferrer", target: "_blank", cls: "trace-link"},
      "Open the trace ", h("code", {text: q.trace_id}));
  }
  var input = h("input", {readonly: true, value: q.trace_id, id: "trace-id", cls: "mono",
    "aria-label": "Trace id", onfocus: function () { input.select(); }});
  var note = h("span", {role: "status", cls: "muted"});
  var btn = h("button", {type: "button", text: "Copy trace id", onclick: function () {
    input.select();
    var done = function () { note.textContent = "copied"; };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(q.trace_id).then(done, function () {
        document.execCommand("copy"); done(); });
    } else { document.execCommand("copy"); done(); }
  }});
  return h("span", {cls: "trace"}, h("label", {"for": "trace-id", text: "Trace id "}), input,
    " ", btn, " ", note);
}
function graderVerdict(g) {
  if (g.err) return "errored";
  if (g.score === null) return "skipped";
  // green only for a bar that was met and could have been missed
  if (g.can_fail === false) return "scored";
  return g.passed ? "passed" : "failed";
}
function checksTable(g) {
  var cols = ["check", "status", "severity", "required", "outcome", "probabilities", "rule",
    "evidence", "reason"];
  return h("table", {cls: "grid checks"},
    h("caption", {text: "Rubric checks of " + g.id}),
    h("thead", null, h("tr", null, cols.map(function (c) {
      return h("th", {scope: "col", text: c}); }))),
    h("tbody", null, g.checks.map(function (c) {
      var probs = c.probabilities ? Object.keys(c.probabilities).map(function (k) {
        return k + " " + fmt(c.probabilities[k]); }).join(", ") : "-";
      return h("tr", {cls: "check s-" + c.status},
        h("td", null, h("code", {text: c.id + (c.version ? "@" + c.version : "")})),
        h("td", null, h("span", {cls: "badge v-" + ({pass: "passed", fail: "failed",
          review: "review", error: "errored"}[c.status] || "skipped"), text: c.status})),
        h("td", null, c.severity || "-"), h("td", null, c.required === false ? "no" : "yes"),
        h("td", null, c.outcome || "-"), h("td", null, probs), h("td", null, c.rule || "-"),
        h("td", null, c.evidence || "-"), h("td", null, c.reason || "-"));
    })));
}
function callItem(q, c, i, children) {
  var broken = c.m.some(function (m) { return !m.ok; });
  var args = h("dl", {cls: "args"});
  Object.keys(c.args).forEach(function (k) {
    args.append(h("dt", {text: k}), h("dd", null, h("code", {text: repr(c.args[k])})));
  });
  var marks = c.m.map(function (m) {
    var e = q.expected[m.i] || {label: "?"};
    var text = (m.ok ? "meets" : "breaks") + " expected_tools[" + m.i + "] " + e.label +
      (m.why ? ": " + m.why : "");
    return h("span", {cls: "mark " + (m.ok ? "ok" : "bad"), text: text});
  });
  return h("li", {cls: "call" + (broken ? " broken" : ""), id: "call-" + i,
      "data-tool": c.n, "data-outcome": c.o},
    h("div", {cls: "call-head"},
      h("span", {cls: "seq", text: "#" + (i + 1)}),
      h("code", {cls: "qid", text: c.q}),
      h("span", {cls: "badge o-" + c.o, text: c.o + (c.e ? " (" + c.e + ")" : "")}),
      c.w ? h("span", {cls: "badge world", title: "what the question set, not the agent",
        text: "set by the question: " + c.w}) : null,
      h("span", {cls: "agent", text: "agent " + c.a}),
      c.nd ? h("span", {cls: "node", text: "node " + c.nd}) : null,
      h("span", {cls: "turn", text: c.t === null ? "no model turn" : "model turn " + c.t})),
    marks, Object.keys(c.args).length ? args : h("p", {cls: "muted", text: "no arguments"}),
    c.r === null ? null : h("details", null, h("summary", {text: "result"}),
      h("pre", {text: c.r})),
    children.length ? h("ol", {cls: "calls", "aria-label": "calls of the sub-agent " +
      children[0].c.a}, children.map(function (x) { return x.el; })) : null);
}
"""
    + PAUSE_SCRIPT
    + r"""
function timeline(q) {
  if (q.record !== "present") {
    var words = q.record === "absent" ? "No tool-call record: nobody knows which tools ran " +
      "(chat mode, or an agent whose calls cannot be seen)." : q.record === "missing" ?
      "The run recorded tool calls, but the run's trace file has no record for this question." :
      "The tool-call record is " + q.record + ".";
    return h("p", {cls: "advisory", text: words});
  }
  if (!q.calls.length && !(q.pauses || []).length) {
    return h("p", {text: "The agent ran and called no tool."});
  }
  var kids = q.calls.map(function () { return []; });
  var top = [];
  for (var i = q.calls.length - 1; i >= 0; i--) {
    var c = q.calls[i];
    var el = callItem(q, c, i, kids[i]);
    var entry = {c: c, el: el, i: i};
    if (c.p === null || c.p === undefined) top.unshift(entry); else kids[c.p].unshift(entry);
  }
  var list = h("ol", {cls: "calls", id: "timeline", "aria-label": "Tool calls and pauses in order"},
    withPauses(q, top).map(function (x) { return x.el; }));
  return q.path ? h("div", null, h("p", {cls: "path", id: "graph-path"},
    h("strong", {text: "Path through the graph: "}), h("code", {text: q.path})), list) : list;
}
function expectations(q) {
  var box = h("aside", {cls: "expect", "aria-labelledby": "exp-h"},
    h("h4", {id: "exp-h", text: "Expected tools"}));
  if (!q.expected.length) { box.append(h("p", {cls: "muted", text: "none set"})); return box; }
  var unmet = q.expected.filter(function (e) { return e.met === false; }).length;
  box.append(h("p", {text: unmet ? unmet + " of " + q.expected.length + " unmet" :
    "all " + q.expected.length + " met"}));
  box.append(h("ul", {id: "expectations"}, q.expected.map(function (e, i) {
    var cls = e.met === false ? "unmet" : e.met ? "met" : "";
    return h("li", {cls: cls}, h("strong", {text: e.met === false ? "✗ unmet " : e.met ?
      "✓ met " : "? "}), "[" + i + "] ", h("code", {text: e.label}),
      e.why ? h("span", {cls: "why", text: e.why}) : null);
  })));
  return box;
}
function renderQuestion(q) {
  var tags = h("span", {cls: "tags"});
  q.tags.forEach(function (t) { tags.append(h("span", {text: t})); });
  var gTable = h("table", {cls: "grid", id: "graders"},
    h("caption", {text: "Each grader's verdict"}),
    h("thead", null, h("tr", null, ["grader", "verdict", "score", "pass bar", "must pass",
      "reason"].map(function (c) { return h("th", {scope: "col", text: c}); }))),
    h("tbody", null, q.graders.map(function (g) {
      var v = graderVerdict(g);
      return h("tr", {"data-grader": g.id}, h("td", null, h("code", {text: g.id})),
        h("td", null, h("span", {cls: "badge v-" + v, text: v})),
        h("td", {cls: "score"}, g.score === null ? "-" : fmt(g.score) + " / " + fmt(g.max)),
        h("td", {cls: "bar-text", text: g.bar || "-"}),
        h("td", null, g.must ? "yes" : "no"), h("td", {cls: "reason"}, g.reason,
          g.judge ? h("div", {cls: "judge-id", text: g.judge}) : null));
    })));
  var graders = section("Graders", "qs-graders");
  graders.append(gTable);
  q.graders.forEach(function (g) { if (g.checks.length) graders.append(checksTable(g)); });
  var input = section("Input", "qs-input");
  q.input.forEach(function (m) {
    input.append(h("div", {cls: "msg"}, h("div", {cls: "role", text: m.role}),
      h("pre", {text: m.content})));
  });
  if (!q.input.length) input.append(h("p", {cls: "muted", text: "not stored"}));
  var answer = section("Answer", "qs-answer");
  add(answer, [q.error ? h("p", {cls: "advisory", text: "The agent failed (" +
    (q.error_type || "error") + "): " + q.error}) : null,
    q.outcome ? h("p", {cls: "advisory", id: "outcome", text: "Ended " + q.outcome}) : null,
    h("pre", {id: "answer", text: q.response === null ? "(not stored)" : q.response})]);
  var labels = section("Labels", "qs-labels");
  if (q.labels && q.labels.length) {
    labels.append(h("table", {cls: "grid", id: "labels"},
      h("caption", {text: "What people answered (tracegrade label)"}),
      h("thead", null, h("tr", null, ["label", "answer", "by", "when", "note"].map(
        function (c) { return h("th", {scope: "col", text: c}); }))),
      h("tbody", null, q.labels.map(function (a) {
        var review = a.label.indexOf("review:") === 0;
        var answer = review ? (a.answer ? "pass" : "fail") : (a.answer ? "yes" : "no");
        return h("tr", {cls: a.stale ? "stale" : null}, h("td", null, h("code", {text: a.label})),
          h("td", null, h("span", {cls: "badge v-" + (a.answer ? "passed" : "failed"),
            text: answer})),
          h("td", {text: a.by}), h("td", {text: a.created}),
          h("td", {text: (a.stale ? "STALE: the answer changed since; not applied. " : "") +
            (a.note || "")}));
      }))));
  } else {
    labels.append(h("p", {cls: "muted", text: "no labels (tracegrade label RUN)"}));
  }
  var calls = section("Tool calls", "qs-calls");
  calls.append(h("div", {cls: "timeline-wrap"}, timeline(q), expectations(q)));
  var back = h("a", {href: "#questions", text: "← All questions"});
  /* `tracegrade serve` adds links (promote, review) to each question; the static page has none */
  var links = Object.keys(DATA.links || {}).map(function (name) {
    var href = DATA.links[name].replace(/\{(target|id|trial)\}/g, function (m, k) {
      return encodeURIComponent(String(k === "trial" ? q.trial || 0 : q[k])); });
    return [" · ", h("a", {href: href, cls: "qaction", "data-action": name, text: name})];
  });
  qRoot.replaceChildren(
    h("p", null, back, links),
    h("h2", {id: "question-h", tabindex: "-1"}, h("code", {text: label(q)}), " ",
      h("span", {cls: "mode", text: "(" + q.target + ")"}), " ",
      h("span", {cls: "badge v-" + q.verdict, text: q.verdict})),
    h("p", {cls: "qhead"}, h("span", null, "composite ", h("strong", {text: fmt(q.composite)})),
      h("span", {text: "objective " + fmt(q.objective)}),
      h("span", {text: "split " + (q.split || "-")}),
      h("span", {text: "bundle " + (q.bundle || "-")}), tags,
      q.latency === null ? null : h("span", {text: fmt(q.latency) + " s"}), traceBox(q)),
    input, answer, graders, labels, calls);
}

"""
)
