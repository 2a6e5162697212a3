"""The Datasets pages: the store's datasets and their questions (add, edit, reorder, disable,
delete, clear `needs_review`, export as YAML), and Promote (a question of a run into a
dataset). Every write goes through the dataset store (`tracegrade.inputs.datastore`), which
validates a question against the dataset schema before it is saved and takes a write lock
for each change; the pages only gather what a person typed.

The editor has a form for the fields the schema keeps simple (id, input as text, criteria,
goal, rubric_ref, split, bundle, tags, disabled) and raw YAML for the rest. A question whose
shape the form cannot hold (a conversation as input, structured values in those fields)
opens read-only in the form and editable whole as YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..errors import TracegradeError
from ..inputs.datastore import NAME_PATTERN, DatasetStore, row_problems, row_revision
from .layout import e, page, q

__all__ = ["DATASET_ROUTES", "form_fits", "row_from_edit"]

TEXT_FIELDS = ("criteria", "goal", "rubric_ref", "split", "bundle")
FORM_FIELDS = ("id", "input", *TEXT_FIELDS, "tags", "disabled")


def form_fits(row: Mapping[str, Any]) -> bool:
    """True when every form field of `row` has a shape the form holds (text, a list of tags
    without commas, a yes/no)."""
    for key in ("id", "input", *TEXT_FIELDS):
        if key in row and not isinstance(row[key], str):
            return False
    tags = row.get("tags", [])
    if not isinstance(tags, list) or any(not isinstance(t, str) or "," in t for t in tags):
        return False
    return isinstance(row.get("disabled", False), bool)


def row_from_edit(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The question an editor's submission describes: the YAML (the whole question, or the
    fields beyond the form), then the form's fields over it. (None, problems) when the YAML
    does not parse or is not a mapping."""
    text = str(body.get("yaml") or "")
    try:
        rest = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return None, [f"YAML{where}: {getattr(exc, 'problem', None) or exc}"]
    if not isinstance(rest, dict):
        return None, ["YAML: the question is a mapping of keys to values"]
    if body.get("whole"):
        return rest, []
    row = {k: v for k, v in rest.items() if k not in FORM_FIELDS}
    for key in ("id", "input", *TEXT_FIELDS):
        value = str(body.get(key) or "")
        if value.strip():
            row[key] = value
    tags = [t.strip() for t in str(body.get("tags") or "").split(",") if t.strip()]
    if tags:
        row["tags"] = tags
    if body.get("disabled") is True:
        row["disabled"] = True
    order = {k: i for i, k in enumerate(FORM_FIELDS)}
    return dict(sorted(row.items(), key=lambda kv: order.get(kv[0], len(order)))), []


def _store(request: Request) -> DatasetStore:
    return DatasetStore(request.app.state.tg.store_path)


def _names(request: Request) -> list[tuple[str, int]]:
    path = request.app.state.tg.store_path
    if not path.is_file():
        return []
    with DatasetStore(path) as store:
        return store.names()


def _lookup(request: Request, name: str, qid: str | None = None) -> tuple[str, Any] | None:
    """The dataset (and question) the path names, looked up in the store; None when absent."""
    if name not in {n for n, _ in _names(request)}:
        return None
    with _store(request) as store:
        questions = store.questions(name)
    if qid is None:
        return name, questions
    found = next((x for x in questions if x.id == qid), None)
    return (name, found) if found is not None else None


def _problems(name: str, row: dict[str, Any]) -> list[str]:
    out = []
    for p in row_problems(name, [row]):
        where = p.pointer.removeprefix("/questions/0") or "/"
        out.append(f"{where}: {p.message}" + (f" ({p.hint})" if p.hint else ""))
    return out


def datasets_page(request: Request) -> Response:
    names = _names(request)
    rows = "".join(
        f'<tr><td><a href="/datasets/{q(n)}"><code>{e(n)}</code></a></td>'
        f'<td class="num">{count}</td>'
        f'<td><a href="/datasets/{q(n)}/export" download="{e(n)}.yaml">export YAML</a></td></tr>'
        for n, count in names
    )
    body = (
        "<main><h1>Datasets</h1>"
        f'<p class="muted">The dataset store <code>{e(request.app.state.tg.store_path)}</code>; '
        "a target reads one with <code>dataset: store:NAME</code>.</p>"
        + (
            '<table class="grid" id="datasets"><thead><tr><th scope="col">dataset</th>'
            '<th scope="col" class="num">questions</th><th scope="col"></th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
            if names
            else '<p id="no-datasets">No dataset yet: promote a question of a run, or create one.</p>'
        )
        + '<form class="controls" data-path="/api/datasets" aria-label="New dataset">'
        '<label for="new-name">New dataset<input type="text" id="new-name" name="name" '
        'required pattern="[A-Za-z0-9][A-Za-z0-9_.\\-]*"></label>'
        '<button type="submit">Create</button><ul class="errors" hidden></ul></form></main>'
    )
    return HTMLResponse(page("Datasets", body, active="datasets"))


def _ops(name: str, x: Any, i: int, total: int) -> str:
    base = f"/api/datasets/{q(name)}/questions/{q(x.id)}"
    disabled = bool(x.row.get("disabled"))
    buttons = [
        f'<button type="button" data-path="{e(base)}/move" data-body=\'{{"to": {i - 1}}}\''
        f'{" disabled" if i == 0 else ""} aria-label="Move {e(x.id)} up">↑</button>',
        f'<button type="button" data-path="{e(base)}/move" data-body=\'{{"to": {i + 1}}}\''
        f'{" disabled" if i == total - 1 else ""} aria-label="Move {e(x.id)} down">↓</button>',
        f'<button type="button" data-path="{e(base)}/disabled" '
        f"data-body='{{\"disabled\": {'false' if disabled else 'true'}}}'>"
        f"{'enable' if disabled else 'disable'}</button>",
        f'<button type="button" data-method="DELETE" data-path="{e(base)}" '
        f'data-confirm="Delete question {e(x.id)}?">delete</button>',
    ]
    if x.needs_review:
        buttons.append(
            f'<button type="button" data-path="{e(base)}/reviewed" class="reviewed">'
            "reviewed: clear needs_review</button>"
        )
    return "".join(buttons)


def dataset_page(request: Request) -> Response:
    name = request.path_params["name"]
    found = _lookup(request, name)
    if found is None:
        return _missing(request, f"no dataset {name!r} in the store")
    _, questions = found
    rows = []
    for i, x in enumerate(questions):
        text = x.row["input"] if isinstance(x.row.get("input"), str) else "(conversation)"
        flags = []
        if x.row.get("disabled"):
            flags.append('<span class="badge v-skipped">disabled</span>')
        if x.needs_review:
            flags.append(
                f'<span class="badge v-review">needs review: {e(", ".join(x.needs_review))}</span>'
            )
        rows.append(
            f'<tr data-q="{e(x.id)}"{" class=disabled" if x.row.get("disabled") else ""}>'
            f'<td class="num">{i + 1}</td>'
            f'<td><a href="/datasets/{q(name)}/questions/{q(x.id)}"><code>{e(x.id)}</code></a></td>'
            f"<td>{e(text[:120])}</td><td>{''.join(flags)}"
            + (f'<div class="muted">from {e(x.origin)}</div>' if x.origin else "")
            + f'</td><td class="ops">{_ops(name, x, i, len(questions))}</td></tr>'
        )
    body = (
        f"<main><h1>Dataset <code>{e(name)}</code></h1>"
        f'<p class="actions"><a href="/datasets/{q(name)}/new">Add a question</a> · '
        f'<a href="/datasets/{q(name)}/export" download="{e(name)}.yaml" id="export">Export YAML</a></p>'
        '<table class="grid" id="questions"><thead><tr><th scope="col" class="num">#</th>'
        '<th scope="col">question</th><th scope="col">input</th><th scope="col">marks</th>'
        f'<th scope="col">change</th></tr></thead><tbody>{"".join(rows)}</tbody></table></main>'
    )
    return HTMLResponse(page(f"Dataset {name}", body, active="datasets"))


def _missing(request: Request, what: str) -> Response:
    from .layout import not_found

    return not_found(what)


def _editor(name: str, row: dict[str, Any], *, path: str, method: str, revision: str = "") -> str:
    fits = form_fits(row)
    ro = "" if fits else " disabled"
    rest = {k: v for k, v in row.items() if k not in FORM_FIELDS} if fits else row
    fields = [
        f'<label for="e-id">id<input type="text" id="e-id" name="id" value="{e(row.get("id", ""))}"{ro}></label>',
        f'<label for="e-input">input<textarea id="e-input" name="input" rows="4"{ro}>'
        f"{e(row.get('input', '') if isinstance(row.get('input', ''), str) else yaml.safe_dump(row['input']))}</textarea></label>",
    ]
    for key in TEXT_FIELDS:
        value = row.get(key, "")
        shown = value if isinstance(value, str) else yaml.safe_dump(value).strip()
        fields.append(
            f'<label for="e-{key}">{key}<input type="text" id="e-{key}" name="{key}" '
            f'value="{e(shown)}"{ro}></label>'
        )
    tags = row.get("tags", [])
    shown_tags = ", ".join(map(str, tags)) if isinstance(tags, list) else str(tags)
    fields.append(
        f'<label for="e-tags">tags (comma-separated)<input type="text" id="e-tags" name="tags" '
        f'value="{e(shown_tags)}"{ro}></label>'
    )
    fields.append(
        f'<label for="e-disabled"><input type="checkbox" id="e-disabled" name="disabled"'
        f"{' checked' if row.get('disabled') is True else ''}{ro}> disabled</label>"
    )
    note = (
        ""
        if fits
        else '<p class="advisory" id="readonly-note">This question has a shape the form cannot '
        "hold: the form is read-only; edit the whole question as YAML below.</p>"
    )
    yaml_text = yaml.safe_dump(rest, sort_keys=False, allow_unicode=True) if rest else ""
    return (
        f'<form class="editor" id="editor" data-path="{e(path)}" data-method="{method}">'
        f"{note}<fieldset><legend>Fields</legend>{''.join(fields)}</fieldset>"
        f'<label for="e-yaml">{"The whole question" if not fits else "Everything else"} (YAML)'
        f'<textarea id="e-yaml" name="yaml" spellcheck="false">{e(yaml_text)}</textarea></label>'
        f'<input type="hidden" name="revision" value="{e(revision)}">'
        + ('<input type="hidden" name="whole" value="1">' if not fits else "")
        + '<ul class="errors" id="errors" role="alert" hidden></ul>'
        '<button type="submit">Save</button> '
        f'<a href="/datasets/{q(name)}">back to the dataset</a></form>'
    )


def question_page(request: Request) -> Response:
    name, qid = request.path_params["name"], request.path_params["qid"]
    found = _lookup(request, name, qid)
    if found is None:
        return _missing(request, f"no question {qid!r} in dataset {name!r}")
    x = found[1]
    marks = (
        f'<p class="advisory">Needs review: {e(", ".join(x.needs_review))}</p>'
        if x.needs_review
        else ""
    )
    body = (
        f'<main><h1>Question <code>{e(x.id)}</code> of <a href="/datasets/{q(name)}">'
        f"<code>{e(name)}</code></a></h1>{marks}"
        + (f'<p class="muted">from {e(x.origin)}</p>' if x.origin else "")
        + f'<p class="muted" id="stored-in">In the dataset store '
        f"<code>{e(request.app.state.tg.store_path)}</code>: a target reads it with "
        f"<code>dataset: store:{e(name)}</code>, not from a dataset file.</p>"
        + _editor(
            name,
            x.row,
            path=f"/api/datasets/{q(name)}/questions/{q(x.id)}",
            method="PUT",
            revision=row_revision(x.row),
        )
        + "</main>"
    )
    return HTMLResponse(page(f"{x.id} · {name}", body, active="datasets"))


def new_question_page(request: Request) -> Response:
    name = request.path_params["name"]
    if _lookup(request, name) is None:
        return _missing(request, f"no dataset {name!r} in the store")
    body = (
        f'<main><h1>New question in <a href="/datasets/{q(name)}"><code>{e(name)}</code></a></h1>'
        + _editor(name, {}, path=f"/api/datasets/{q(name)}/questions", method="POST")
        + "</main>"
    )
    return HTMLResponse(page(f"New question · {name}", body, active="datasets"))


def export_dataset(request: Request) -> Response:
    name = request.path_params["name"]
    if _lookup(request, name) is None:
        return _missing(request, f"no dataset {name!r} in the store")
    with _store(request) as store:
        text = store.export_yaml(name)
    return Response(
        text,
        media_type="application/yaml",
        headers={"content-disposition": f'attachment; filename="{name}.yaml"'},
    )


# -- writes ---------------------------------------------------------------------------------
def _json(ok: bool, message: str, status: int = 200, **extra: Any) -> JSONResponse:
    return JSONResponse({"ok": ok, "message": message, **extra}, status_code=status)


async def _body(request: Request) -> dict[str, Any] | None:
    try:
        data = await request.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _write(fn: Any) -> Any:
    """A write handler: the JSON body read, the work done in a thread, errors as JSON."""

    async def handler(request: Request) -> Response:
        body = await _body(request)
        if body is None:
            return _json(False, "a JSON object is needed", 400)
        try:
            return await run_in_threadpool(fn, request, body)
        except TracegradeError as exc:
            return _json(False, str(exc), 400, problems=[str(exc)])

    handler.__name__ = fn.__name__
    return handler


def _create(request: Request, body: dict[str, Any]) -> Response:
    name = str(body.get("name") or "")
    if not NAME_PATTERN.match(name):
        return _json(False, f"dataset name {name!r}: use letters, digits, _ . -", 400)
    with _store(request) as store:
        store.create(name)
    return _json(True, f"dataset {name} created", redirect=f"/datasets/{q(name)}")


def _save(request: Request, body: dict[str, Any]) -> Response:
    name = request.path_params["name"]
    qid = request.path_params.get("qid")
    found = _lookup(request, name, qid)
    if found is None:
        return _json(False, f"no question {qid!r} in dataset {name!r}", 404)
    row, problems = row_from_edit(body)
    if row is not None:
        problems = _problems(name, row)
    if row is None or problems:
        return _json(False, "not saved: the question does not validate", 422, problems=problems)
    with _store(request) as store:
        if qid is None:
            store.add(name, row, origin="added in tracegrade serve")
        else:
            current = found[1]
            store.update(
                name,
                row,
                needs_review=current.needs_review,
                revision=str(body.get("revision") or "") or None,
                question_id=qid,
            )
    if qid is not None and str(row["id"]) == qid:
        # the editor stays, with its message and the revision it now edits
        return _json(True, f"saved {row['id']}", revision=row_revision(row))
    return _json(
        True, f"saved {row['id']}", redirect=f"/datasets/{q(name)}/questions/{q(row['id'])}"
    )


def _existing(request: Request) -> tuple[str, Any] | None:
    return _lookup(request, request.path_params["name"], request.path_params["qid"])


def _move(request: Request, body: dict[str, Any]) -> Response:
    found = _existing(request)
    if found is None:
        return _json(False, "no such question", 404)
    to = body.get("to")
    if not isinstance(to, int):
        return _json(False, "`to` is a position (a whole number)", 400)
    with _store(request) as store:
        store.move(found[0], found[1].id, to)
    return _json(True, f"moved {found[1].id}")


def _disable(request: Request, body: dict[str, Any]) -> Response:
    found = _existing(request)
    if found is None:
        return _json(False, "no such question", 404)
    name, x = found
    row = dict(x.row)
    if body.get("disabled") is True:
        row["disabled"] = True
    else:
        row.pop("disabled", None)
    with _store(request) as store:
        store.update(name, row, needs_review=x.needs_review, revision=row_revision(x.row))
    return _json(True, f"{x.id} {'disabled' if row.get('disabled') else 'enabled'}")


def _delete(request: Request, body: dict[str, Any]) -> Response:
    found = _existing(request)
    if found is None:
        return _json(False, "no such question", 404)
    with _store(request) as store:
        store.remove(found[0], found[1].id)
    return _json(True, f"deleted {found[1].id}")


def _reviewed(request: Request, body: dict[str, Any]) -> Response:
    from ..curation.promote import clear_needs_review

    found = _existing(request)
    if found is None:
        return _json(False, "no such question", 404)
    clear_needs_review(request.app.state.tg.store_path, found[0], found[1].id)
    return _json(True, f"{found[1].id}: needs_review cleared")


DATASET_ROUTES = [
    ("/datasets", datasets_page, ["GET"]),
    ("/datasets/{name}", dataset_page, ["GET"]),
    ("/datasets/{name}/new", new_question_page, ["GET"]),
    ("/datasets/{name}/export", export_dataset, ["GET"]),
    ("/datasets/{name}/questions/{qid:path}", question_page, ["GET"]),
    ("/api/datasets", _write(_create), ["POST"]),
    ("/api/datasets/{name}/questions", _write(_save), ["POST"]),
    ("/api/datasets/{name}/questions/{qid:path}", _write(_save), ["PUT"]),
    ("/api/datasets/{name}/questions/{qid:path}", _write(_delete), ["DELETE"]),
    ("/api/datasets/{name}/questions/{qid:path}/move", _write(_move), ["POST"]),
    ("/api/datasets/{name}/questions/{qid:path}/disabled", _write(_disable), ["POST"]),
    ("/api/datasets/{name}/questions/{qid:path}/reviewed", _write(_reviewed), ["POST"]),
]
