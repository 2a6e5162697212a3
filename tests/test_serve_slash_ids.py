"""`tracegrade serve` on dataset questions whose id holds a `/` (`billing/refund-1`: ids named by
area, as teams write them): the question page opens, and an edit, a move, a disable and a
delete reach that question, never a 404 and never another question."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tracegrade.app.server import AppState, build_app
from tracegrade.inputs.datastore import DatasetStore, row_revision

SLASHED = "billing/refund-1"
"""Ends like a route of its own would: `.../questions/billing/move` is a question id here."""
LOOKALIKE = "billing/move"


@pytest.fixture
def app(tmp_path: Path):
    state = AppState(runs_dir=tmp_path / "runs", store_path=tmp_path / "datasets.sqlite")
    with DatasetStore(state.store_path) as store:
        for qid in (SLASHED, LOOKALIKE, "plain"):
            store.add("d", {"id": qid, "input": f"asked {qid}"})
    with TestClient(build_app(state, hosts=("testserver",))) as client:
        client.headers["x-tracegrade-token"] = state.token
        yield client, state


def _rows(state: AppState) -> list[dict]:
    with DatasetStore(state.store_path) as store:
        return [q.row for q in store.questions("d")]


def test_a_question_whose_id_holds_a_slash_opens_from_the_dataset_page(app):
    client, _state = app
    listing = client.get("/datasets/d")
    assert listing.status_code == 200
    assert "/datasets/d/questions/billing%2Frefund-1" in listing.text
    page = client.get("/datasets/d/questions/billing%2Frefund-1")
    assert page.status_code == 200, page.text
    assert "asked billing/refund-1" in page.text
    lookalike = client.get("/datasets/d/questions/billing%2Fmove")
    assert lookalike.status_code == 200 and "asked billing/move" in lookalike.text


def test_a_slashed_question_is_edited_moved_disabled_and_deleted(app):
    client, state = app
    revision = row_revision({"id": SLASHED, "input": f"asked {SLASHED}"})
    r = client.put(
        "/api/datasets/d/questions/billing%2Frefund-1",
        json={"id": SLASHED, "input": "edited", "revision": revision, "yaml": ""},
    )
    assert r.status_code == 200, r.text
    assert _rows(state)[0] == {"id": SLASHED, "input": "edited"}
    r = client.post("/api/datasets/d/questions/billing%2Fmove/move", json={"to": 0})
    assert r.status_code == 200, r.text
    assert [row["id"] for row in _rows(state)] == [LOOKALIKE, SLASHED, "plain"]
    r = client.post(
        "/api/datasets/d/questions/billing%2Frefund-1/disabled", json={"disabled": True}
    )
    assert r.status_code == 200, r.text
    assert _rows(state)[1] == {"id": SLASHED, "input": "edited", "disabled": True}
    r = client.request("DELETE", "/api/datasets/d/questions/billing%2Frefund-1", json={})
    assert r.status_code == 200, r.text
    assert [row["id"] for row in _rows(state)] == [LOOKALIKE, "plain"]
