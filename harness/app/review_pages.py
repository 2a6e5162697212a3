"""The Review queue: every rubric check left in Review and every checklist item without an
answer, across runs (newest first), one question at a time with its answer, tool calls and
the graders' reasons. A decision goes through `record_answer`, the function `tracegrade
label` stores its answers with: a resolved Review changes the gate wherever it is read.

The Promote page lives here too: a question of a run into a store dataset, through
`promote_question` (`tracegrade dataset promote`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..errors import TracegradeError
from ..reports.common import fmt
from .index import RunEntry
from .layout import e, page, url

__all__ = ["REVIEW_ROUTES", "QueueItem", "review_queue"]


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One question with something left for a person."""

    run_id: str
    target: str
    question_id: str
    trial: int
    items: tuple[tuple[str, str], ...]
    """(label, what is asked) still open."""
    failing: bool = False
    """The question failed or errored (what "failing first" puts ahead)."""


def _checklists(state: Any, entry: RunEntry) -> dict[str, Any]:
    from ..curation.labelling import checklists_of

    assert entry.outcome is not None
    return checklists_of(entry.outcome.manifest, state.config)


def review_queue(
    state: Any, entries: Sequence[RunEntry], *, failing_first: bool = False
) -> list[QueueItem]:
    """Every question of `entries` with an open Review check or checklist item, in order
    (runs newest first, each in file order); `failing_first`: the questions that failed or
    errored ahead of the rest, each group in that order."""
    from ..curation.labelling import open_items
    from ..reports.html.data import question_verdict

    out = []
    for entry in entries:
        if entry.outcome is None:
            continue
        checklists = _checklists(state, entry)
        for t in entry.outcome.targets:
            for qs in t.questions:
                items = open_items(qs, checklists.get(t.target, []))
                if items:
                    failing = question_verdict(qs) in ("failed", "errored")
                    item = QueueItem(entry.run_id, t.target, qs.id, qs.trial, tuple(items), failing)
                    out.append(item)
    if failing_first:
        out.sort(key=lambda item: not item.failing)  # stable: each group keeps its order
    return out


ORDERS = {"": "file order", "failing": "failing first"}


def _landing(queue: Sequence[QueueItem], params: Any) -> tuple[int | None, str]:
    """The queue index of the question a link named (`target`, `question`, `trial`), and a
    note when it has nothing waiting; (None, "") when no question was named."""
    wanted = params.get("question")
    if not wanted:
        return None, ""
    target, trial = params.get("target") or "", params.get("trial") or "0"
    for i, item in enumerate(queue):
        same_target = not target or item.target == target
        if item.question_id == wanted and same_target and str(item.trial) == trial:
            return i, ""
    return None, (
        f'<p class="advisory" id="not-waiting">Question <code>{e(wanted)}</code> has nothing '
        "waiting for a person (no check in Review, every checklist item answered); the queue "
        "goes on below.</p>"
    )


def _timeline(calls: list[Any] | None) -> str:
    if calls is None:
        return '<p class="advisory">No tool-call record: nobody knows which tools ran.</p>'
    if not calls:
        return "<p>The agent ran and called no tool.</p>"
    rows = []
    for i, c in enumerate(calls, 1):
        args = "".join(
            f"<dt>{e(k)}</dt><dd><code>{e(repr(v))}</code></dd>" for k, v in c.args.items()
        )
        rows.append(
            f'<li class="call" data-tool="{e(c.name)}"><div class="call-head">'
            f'<span class="seq">#{i}</span><code>{e(c.name)}</code>'
            f'<span class="badge o-{e(c.outcome)}">{e(c.outcome)}</span></div>'
            + (f'<dl class="args">{args}</dl>' if args else '<p class="muted">no arguments</p>')
            + "</li>"
        )
    return f'<ol class="calls" id="timeline">{"".join(rows)}</ol>'


def _graders(task: Any) -> str:
    rows = []
    for g in task.graders:
        verdict = (
            "errored" if g.error else "skipped" if g.skipped else "passed" if g.passed else "failed"
        )
        score = "-" if g.score is None else f"{fmt(g.score)} / {fmt(g.max_score)}"
        rows.append(
            f'<tr data-grader="{e(g.grader_id)}"><td><code>{e(g.grader_id)}</code></td>'
            f'<td><span class="badge v-{verdict}">{verdict}</span></td><td>{e(score)}</td>'
            f'<td class="reason">{e(g.reason)}</td></tr>'
        )
        for c in g.checks:
            rows.append(
                f'<tr class="check"><td>↳ <code>{e(c.get("id"))}</code></td>'
                f"<td>{e(c.get('status'))}</td><td>{e(c.get('severity') or '')}</td>"
                f'<td class="reason">{e(c.get("reason") or c.get("rule") or "")}</td></tr>'
            )
    return (
        '<table class="grid" id="graders"><caption>What the graders and judges said</caption>'
        '<thead><tr><th scope="col">grader</th><th scope="col">verdict</th>'
        '<th scope="col">score</th><th scope="col">reason</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _task(state: Any, entry: RunEntry, item: QueueItem) -> Any:
    from ..curation.labelling import label_tasks
    from ..rundir.directory import RunDirectory

    with RunDirectory(entry.run_dir).read_store() as store:
        tasks = label_tasks(entry.run_dir, store, _checklists(state, entry), ids=())
    for t in tasks:
        if (t.target, t.question_id, t.trial) == (item.target, item.question_id, item.trial):
            return t
    return None


def review_page(request: Request) -> Response:
    state = request.app.state.tg
    entries = state.index.entries()
    run_filter = request.query_params.get("run") or ""
    if run_filter:
        entries = [r for r in entries if r.run_id == run_filter]
    order = request.query_params.get("order") or ""
    order = order if order in ORDERS else ""
    queue = review_queue(state, entries, failing_first=order == "failing")
    try:
        at = max(0, int(request.query_params.get("at") or 0))
    except ValueError:
        at = 0
    landed, note = _landing(queue, request.query_params)
    at = landed if landed is not None else at
    orders = " · ".join(
        f"<strong aria-current=true>{e(words)}</strong>"
        if key == order
        else f'<a href="{url("/review", run=run_filter, order=key)}" data-order="{key}">'
        f"{e(words)}</a>"
        for key, words in ORDERS.items()
    )
    head = f'<main><h1>Review queue</h1><p class="controls" id="order">Order: {orders}</p>{note}'

    if not queue:
        body = (
            head + '<p id="queue-empty">Nothing waits for a person: no rubric check is in '
            "Review and every checklist item is answered"
            + (f" in run <code>{e(run_filter)}</code>" if run_filter else "")
            + ".</p></main>"
        )
        return HTMLResponse(page("Review queue", body, active="review"))
    at = min(at, len(queue) - 1)
    item = queue[at]
    entry = next(r for r in entries if r.run_id == item.run_id)
    task = _task(state, entry, item)
    nxt = url("/review", run=run_filter, order=order, at=(at + 1) % len(queue))
    after = url("/review", run=run_filter, order=order, at=at)
    prev = url("/review", run=run_filter, order=order, at=at - 1) if at else ""
    boxes = []
    for label, asked in item.items:
        boxes.append(
            f'<li class="item" data-label="{e(label)}"><p>{e(asked)}</p>'
            '<button type="button" data-answer="pass"><kbd>p</kbd> pass / yes</button> '
            '<button type="button" data-answer="fail"><kbd>f</kbd> fail / no</button> '
            '<span class="state muted" role="status"></span></li>'
        )
    stale = [a for a in (task.annotations if task else []) if a.get("stale")]
    stale_note = (
        '<p class="advisory">Stale labels (the answer changed since; not applied): '
        + e(", ".join(f"{a['label']} by {a['by']}" for a in stale))
        + "</p>"
        if stale
        else ""
    )
    trial = f" trial {item.trial}" if item.trial else ""
    failing = ' <span class="badge v-failed">failing</span>' if item.failing else ""
    body = (
        head
        + f'<p class="muted">{at + 1} of {len(queue)} question(s) waiting · keys: <kbd>p</kbd> pass, '
        "<kbd>f</kbd> fail, <kbd>n</kbd> note, <kbd>j</kbd> next, <kbd>k</kbd> previous</p>"
        f'<section id="review" data-run="{e(item.run_id)}" data-target="{e(item.target)}" '
        f'data-question="{e(item.question_id)}" data-trial="{item.trial}" data-next="{nxt}" '
        f'data-after="{after}" data-prev="{prev}">'
        f'<h2 id="review-h"><code>{e(item.question_id)}</code>{e(trial)}{failing} '
        f'<span class="mode">({e(item.target)}, run <a href="/runs/{e(item.run_id)}">'
        f"{e(item.run_id)}</a>)</span></h2>{stale_note}"
        '<div class="review-grid"><div>'
        f'<h3>Input</h3><pre id="input">{e(task.input if task else "")}</pre>'
        + (
            f'<p class="advisory">The agent failed: {e(task.error)}</p>'
            if task and task.error
            else ""
        )
        + f'<h3>Answer</h3><pre id="answer">{e(task.response if task else "")}</pre>'
        f"<h3>Tool calls</h3>{_timeline(task.tool_calls if task else None)}"
        f"<h3>Graders</h3>{_graders(task) if task else ''}</div>"
        '<aside><h3>Decide</h3><ol class="items">'
        + "".join(boxes)
        + '</ol><label for="note">Note (<kbd>n</kbd>; sent with the next decision)'
        '<input type="text" id="note" name="note" autocomplete="off"></label>'
        f'<p><a href="{nxt}">Next question (<kbd>j</kbd>)</a></p></aside></div></section></main>'
    )
    return HTMLResponse(page("Review queue", body, active="review"))


async def alabel_api(request: Request) -> Response:
    """POST {run, target, question, trial, label, answer, note}: one decision stored."""
    from starlette.concurrency import run_in_threadpool

    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"ok": False, "message": "a JSON body is needed"}, 400)
    return await run_in_threadpool(_label, request.app.state.tg, body)


def _label(state: Any, body: Any) -> Response:
    from ..curation.labelling import label_tasks, record_answer
    from ..rundir.annotations import REVIEW_PREFIX
    from ..rundir.directory import RunDirectory

    if not isinstance(body, dict):
        return JSONResponse({"ok": False, "message": "a JSON object is needed"}, 400)
    entry = state.index.get(str(body.get("run")))
    if entry is None or entry.outcome is None:
        return JSONResponse({"ok": False, "message": f"no run {body.get('run')!r}"}, 404)
    answer = body.get("answer")
    if not isinstance(answer, bool):
        return JSONResponse({"ok": False, "message": "answer must be true or false"}, 400)
    note = body.get("note") or None
    if note is not None and not isinstance(note, str):
        return JSONResponse({"ok": False, "message": "note must be text"}, 400)
    key = (str(body.get("target")), str(body.get("question")), body.get("trial", 0))
    label = str(body.get("label"))
    with RunDirectory(entry.run_dir).store(redaction=state.redaction) as store:
        tasks = [
            t
            for t in label_tasks(entry.run_dir, store, _checklists(state, entry))
            if (t.target, t.question_id, t.trial) == key
        ]
        if not tasks:
            return JSONResponse(
                {"ok": False, "message": f"run {entry.run_id} has no question {key[1]!r}"}, 404
            )
        try:
            record_answer(
                store, tasks[0], label=label, answer=answer, note=note, author=state.author
            )
        except TracegradeError as exc:
            return JSONResponse({"ok": False, "message": str(exc)}, 400)
    word = (
        ("pass" if answer else "fail")
        if label.startswith(REVIEW_PREFIX)
        else ("yes" if answer else "no")
    )
    return JSONResponse({"ok": True, "message": f"{label} = {word} by {state.author}"})


REVIEW_ROUTES = [
    ("/review", review_page, ["GET"]),
    ("/api/label", alabel_api, ["POST"]),
]
