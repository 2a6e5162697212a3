"""The review app's handlers without a browser (Starlette's test client): the write token,
an edit refused when the question changed since it was opened, a label the question cannot
take refused with nothing written, the runs filters, and the editor's form and YAML halves.
The pages in a real browser: test_serve_browser.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tracegrade.app.datasets_pages import form_fits, row_from_edit
from tracegrade.app.index import RunEntry, TargetSummary
from tracegrade.app.runs_page import filter_runs
from tracegrade.app.server import AppState, build_app
from tracegrade.inputs.datastore import DatasetStore, row_revision


@pytest.fixture
def app(tmp_path: Path):
    state = AppState(runs_dir=tmp_path / "runs", store_path=tmp_path / "datasets.sqlite")
    with TestClient(build_app(state, hosts=("testserver",))) as client:
        client.headers["x-tracegrade-token"] = state.token
        yield client, state


def test_the_printed_url_sets_the_cookie_and_a_wrong_token_writes_nothing(app, tmp_path):
    client, state = app
    anonymous = TestClient(client.app)
    assert anonymous.post("/api/datasets", json={"name": "d"}).status_code == 403
    r = anonymous.get(f"/?token={state.token}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert "SameSite=strict" in r.headers["set-cookie"].replace("samesite", "SameSite")
    assert anonymous.get("/?token=wrong").status_code == 403
    assert (
        not (tmp_path / "datasets.sqlite").exists()
        or not DatasetStore(tmp_path / "datasets.sqlite").names()
    )


def test_an_edit_of_a_question_changed_since_is_refused(app):
    client, state = app
    with DatasetStore(state.store_path) as store:
        store.add("d", {"id": "q1", "input": "first"})
        opened = row_revision({"id": "q1", "input": "first"})
        store.update("d", {"id": "q1", "input": "changed by the CLI"}, needs_review=[])
    r = client.put(
        "/api/datasets/d/questions/q1",
        json={"id": "q1", "input": "mine", "revision": opened, "yaml": ""},
    )
    assert r.status_code == 400 and "changed since it was opened" in r.json()["message"]
    with DatasetStore(state.store_path) as store:
        assert store.questions("d")[0].row["input"] == "changed by the CLI"
    fresh = row_revision({"id": "q1", "input": "changed by the CLI"})
    r = client.put(
        "/api/datasets/d/questions/q1",
        json={"id": "q1", "input": "mine", "revision": fresh, "yaml": "expected: {answer: x}\n"},
    )
    assert r.status_code == 200, r.text
    with DatasetStore(state.store_path) as store:
        row = store.questions("d")[0].row
        assert row == {"id": "q1", "input": "mine", "expected": {"answer": "x"}}


def test_reorder_disable_and_delete_keep_the_others(app):
    client, state = app
    with DatasetStore(state.store_path) as store:
        for qid in ("a", "b", "c"):
            store.add("d", {"id": qid, "input": qid})
    assert client.post("/api/datasets/d/questions/c/move", json={"to": 0}).status_code == 200
    assert client.post("/api/datasets/d/questions/a/disabled", json={"disabled": True}).is_success
    assert client.request("DELETE", "/api/datasets/d/questions/b", json={}).is_success
    with DatasetStore(state.store_path) as store:
        rows = [q.row for q in store.questions("d")]
    assert rows == [{"id": "c", "input": "c"}, {"id": "a", "input": "a", "disabled": True}]
    export = client.get("/datasets/d/export")
    assert export.headers["content-disposition"] == 'attachment; filename="d.yaml"'
    assert "disabled: true" in export.text


def test_the_editor_keeps_the_form_and_the_yaml_apart():
    assert form_fits({"id": "q", "input": "hi", "tags": ["a", "b"]})
    assert not form_fits({"id": "q", "input": [{"role": "user", "content": "hi"}]})
    assert not form_fits({"id": "q", "input": "hi", "tags": ["a,b"]})
    row, problems = row_from_edit(
        {"id": "q", "input": "hi", "tags": "a, b", "yaml": "id: ignored\nexpected: {answer: x}\n"}
    )
    assert problems == [] and row == {
        "id": "q",
        "input": "hi",
        "tags": ["a", "b"],
        "expected": {"answer": "x"},
    }
    whole, _ = row_from_edit({"whole": "1", "id": "ignored", "yaml": "id: q\ninput: [1]\n"})
    assert whole == {"id": "q", "input": [1]}
    bad, problems = row_from_edit({"yaml": "a: [\n"})
    assert bad is None and problems[0].startswith("YAML (line")


def _entry(run_id: str, created: str, verdict: int | None, target: str, tags: list[str]):
    return RunEntry(
        run_id, Path(run_id), created, verdict, [TargetSummary(target, 1, 1, 5.0, verdict)],
        tags, 1, 1, None,
    )  # fmt: skip


def test_the_runs_filters():
    runs = [
        _entry("r3", "2026-03-01T00:00:00+00:00", 2, "a", ["x"]),
        _entry("r2", "2026-02-01T00:00:00+00:00", 0, "b", ["y"]),
        _entry("r1", "2026-01-01T00:00:00+00:00", None, "a", []),
    ]

    def ids(**params: str) -> list[str]:
        return [r.run_id for r in filter_runs(runs, params)]

    assert ids() == ["r3", "r2", "r1"]
    assert ids(target="a") == ["r3", "r1"]
    assert ids(verdict="failed") == ["r3"] and ids(verdict="ungraded") == ["r1"]
    assert ids(tag="y") == ["r2"]
    assert ids(since="2026-02-01") == ["r3", "r2"]
    assert ids(until="2026-02-01") == ["r2", "r1"]


def test_clearing_needs_review_removes_both_marks(app):
    client, state = app
    row = {"id": "p", "input": "hi", "metadata": {"needs_review": ["expected_tools"], "k": 1}}
    with DatasetStore(state.store_path) as store:
        store.add("d", row, needs_review=["expected_tools"])
    page = client.get("/datasets/d")
    assert "needs review: expected_tools" in page.text
    assert client.post("/api/datasets/d/questions/p/reviewed", json={}).is_success
    with DatasetStore(state.store_path) as store:
        (q,) = store.questions("d")
    assert q.needs_review == [] and q.row == {"id": "p", "input": "hi", "metadata": {"k": 1}}
