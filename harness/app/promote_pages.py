"""The Promote page of `tracegrade serve`: a question of a run into a dataset of the store
(`tracegrade dataset promote`), or into the dataset file its target reads (`--into-file`,
comments and order kept), and a message saying where it was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ..errors import TracegradeError
from .datasets_pages import _json, _missing, _names, _write
from .layout import e, page, q

__all__ = ["PROMOTE_ROUTES"]


def promote_page(request: Request) -> Response:
    from ..curation.promote import default_dataset_name

    state = request.app.state.tg
    p = request.query_params
    entry = state.index.get(p.get("run") or "")
    if entry is None or entry.outcome is None:
        return _missing(request, f"no run {p.get('run')!r}")
    target, qid = p.get("target") or "", p.get("question") or ""
    try:
        trial = int(p.get("trial") or 0)
    except ValueError:
        trial = 0
    score = next(
        (
            x
            for t in entry.outcome.targets
            if t.target == target
            for x in t.questions
            if x.id == qid and x.trial == trial
        ),
        None,
    )
    if score is None:
        return _missing(request, f"run {entry.run_id} has no question {qid!r} of {target!r}")
    names = [n for n, _ in _names(request)]
    default = default_dataset_name(entry.outcome.manifest, target)
    options = "".join(f'<option value="{e(n)}">' for n in names)
    body = (
        f"<main><h1>Promote <code>{e(qid)}</code></h1>"
        f'<p>From run <a href="/runs/{q(entry.run_id)}"><code>{e(entry.run_id)}</code></a>, '
        f"target {e(target)}. When the question has no <code>expected_tools</code>, the "
        "agent's actual calls become a draft of them, marked for review.</p>"
        '<form class="controls" id="promote" data-path="/api/promote">'
        + _where_to(state, entry, target)
        + f'<input type="hidden" name="run" value="{e(entry.run_id)}">'
        f'<input type="hidden" name="target" value="{e(target)}">'
        f'<input type="hidden" name="question" value="{e(qid)}">'
        f'<input type="hidden" name="trial" value="{trial}">'
        f'<label for="p-to">Into dataset<input type="text" id="p-to" name="to" list="p-names" '
        f'value="{e(default)}" required></label><datalist id="p-names">{options}</datalist>'
        '<label for="p-as">As id (optional)<input type="text" id="p-as" name="as_id"></label>'
        '<button type="submit">Promote</button><ul class="errors" hidden></ul></form></main>'
    )
    return HTMLResponse(page(f"Promote {qid}", body, active="datasets"))


def _target_file(state: Any, entry: Any, target: str) -> Path | None:
    """The dataset file `target` read in the run, when it is a file that the served config
    names as a target's dataset (the app writes no other file); else None."""
    from ..curation.promote_file import target_dataset_file

    try:
        file = target_dataset_file(entry.outcome.manifest, target).resolve()
    except TracegradeError:
        return None
    named = {t.dataset.resolve() for t in getattr(state.config, "targets", {}).values()}
    return file if file in named and file.is_file() else None


def _where_to(state: Any, entry: Any, target: str) -> str:
    """The choice of where a promoted question goes: a dataset of the store, or (when the
    target reads a file) that file itself, named."""
    file = _target_file(state, entry, target)
    if file is None:
        return (
            f'<p class="muted" id="p-where">Into a dataset of the store '
            f"<code>{e(state.store_path)}</code> (target {e(target)} reads no dataset file).</p>"
        )
    return (
        '<label for="p-into">Where<select id="p-into" name="into">'
        f'<option value="store">a dataset of the store ({e(state.store_path.name)})</option>'
        f'<option value="file">the file target {e(target)} reads: {e(file)}</option>'
        "</select></label>"
    )


def _promote(request: Request, body: dict[str, Any]) -> Response:
    from ..curation.promote import promote_question
    from ..curation.promote_file import promote_into_file

    state = request.app.state.tg
    entry = state.index.get(str(body.get("run") or ""))
    if entry is None:
        return _json(False, f"no run {body.get('run')!r}", 404)
    try:
        trial = int(body.get("trial") or 0)
    except (TypeError, ValueError):
        return _json(False, "trial is a whole number", 400)
    qid = str(body.get("question") or "")
    as_id = str(body.get("as_id") or "") or None
    target = str(body.get("target") or "") or None
    if body.get("into") == "file":
        file = _target_file(state, entry, target or "")
        if file is None:
            return _json(False, "that target reads no dataset file this config names", 400)
        path, row, review, line = promote_into_file(
            entry.run_dir, question_id=qid, as_id=as_id, target=target, trial=trial, path=file
        )
        drafted = " (draft expected_tools: needs review)" if review else ""
        at = f"{path}:{line}" if line else str(path)
        return _json(True, f"promoted into the file {at} as {row['id']}{drafted}")
    name, row, review = promote_question(
        entry.run_dir,
        state.store_path,
        question_id=qid,
        to=str(body.get("to") or "") or None,
        as_id=as_id,
        target=target,
        trial=trial,
    )
    drafted = " (draft expected_tools: needs review)" if review else ""
    return _json(
        True,
        f"promoted into dataset {name} of the store {state.store_path} as {row['id']}{drafted}",
        redirect=f"/datasets/{q(name)}/questions/{q(row['id'])}",
    )


PROMOTE_ROUTES = [
    ("/promote", promote_page, ["GET"]),
    ("/api/promote", _write(_promote), ["POST"]),
]
