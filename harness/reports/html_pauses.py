"""How the HTML question view draws a pause on LangGraph's `interrupt()` (an approval step, a
question back to the user): in the tool-call timeline where it fell, what it asked (the
payload) and the answer given, or that nobody answered. Inlined into `html_assets.SCRIPT`
(inside its closure: it uses the page's `h` and `repr`)."""

from __future__ import annotations

__all__ = ["PAUSE_CSS", "PAUSE_SCRIPT"]

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
