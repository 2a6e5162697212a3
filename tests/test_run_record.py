"""The typed, versioned run record: a run directory written by the first release (checked in
under tests/fixtures/run_v0, store without a schema version) stays readable; the store carries
`PRAGMA user_version`, keeps graders' details and each question's content fingerprint."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tracegrade import InputError, QuestionAnswer, QuestionResult, load_outcome
from tracegrade.rundir.history import load_stored_run
from tracegrade.rundir.identity import read_manifest
from tracegrade.rundir.record import question_fingerprint
from tracegrade.rundir.store import SCHEMA_VERSION, ResultStore
from tracegrade.verdicts.scoring import GraderVerdict, score_question

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run_v0"
# What the first release scored on that run (printed by it when the fixture was written).
V0_COMPOSITES = {"paris": 5.0, "rome": 10 / 3, "crash": 0.0}


def _user_version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


@pytest.fixture
def old_run(tmp_path) -> Path:
    run_dir = tmp_path / FIXTURE.name
    shutil.copytree(FIXTURE, run_dir)
    return run_dir


def test_the_fixture_is_a_version_0_store():
    assert _user_version(FIXTURE / "results.sqlite") == 0


def test_reading_an_old_run_leaves_its_files_untouched(old_run):
    store_file = old_run / "results.sqlite"
    before = hashlib.sha256(store_file.read_bytes()).hexdigest()
    outcome = load_outcome(old_run)
    (target,) = outcome.targets
    assert {q.id: q.composite for q in target.questions} == pytest.approx(V0_COMPOSITES)
    assert hashlib.sha256(store_file.read_bytes()).hexdigest() == before
    assert _user_version(store_file) == 0


def test_an_old_store_is_migrated_in_place_when_opened_for_writing(old_run):
    with ResultStore.in_run_dir(old_run) as store:
        assert store.schema_version == SCHEMA_VERSION
        scores = {q.id: q for q in store.load_scores()}
        runs = {r.id: r for r in store.load_runs()}
    assert _user_version(old_run / "results.sqlite") == SCHEMA_VERSION
    assert {k: v.composite for k, v in scores.items()} == pytest.approx(V0_COMPOSITES)
    assert {q.trial for q in scores.values()} == {0}
    assert scores["crash"].error and scores["crash"].errored
    # The fingerprint a v0 row lacked is computed from the stored question.
    paris = runs["paris"]
    assert paris.content_sha256 == question_fingerprint(paris.answer.row)
    assert scores["paris"].content_sha256 == paris.content_sha256
    # Grader verdicts come back whole, with the must-pass declaration of the run.
    tool = scores["rome"].graders[0]
    assert (tool.grader_id, tool.score, tool.must_pass, tool.passed) == (
        "tool_usage_grader",
        0.0,
        True,
        False,
    )


def test_the_gate_of_an_old_run_is_recomputed_from_its_manifest(old_run):
    outcome = load_outcome(old_run)
    # rome fails a must-pass grader: the stored gate (max_errored 1) fails with exit 2.
    assert outcome.exit_code == 2
    assert outcome.targets[0].verdict.errored == 1


def test_old_manifest_reads_with_its_version_defaults(old_run):
    manifest = read_manifest(old_run)
    assert "version" not in json.loads((old_run / "identity.json").read_text())
    assert manifest.version == 1
    assert manifest.targets["t"].repeats == 1
    assert (
        manifest.targets["t"].dataset.sha256
        == json.loads((old_run / "identity.json").read_text())["targets"]["t"]["dataset"]["sha256"]
    )


def test_stored_run_carries_tool_calls_from_the_trace_file(old_run):
    run = load_stored_run(old_run)
    by_id = {q.id: q for q in run.questions}
    assert [c.name for c in by_id["paris"].tool_calls] == ["lookup"]
    assert by_id["paris"].tool_calls[0].args["city"] == "Paris"
    assert by_id["rome"].tool_calls == []
    assert by_id["paris"].passed is True
    assert by_id["rome"].passed is False
    assert by_id["crash"].passed is False


def test_a_store_newer_than_this_release_is_refused(tmp_path):
    path = tmp_path / "results.sqlite"
    ResultStore(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(InputError, match="newer than this tracegrade") as info:
        ResultStore(path)
    assert info.value.exit_code == 4


def test_a_broken_manifest_is_invalid_input_naming_the_key(old_run):
    data = json.loads((old_run / "identity.json").read_text())
    del data["targets"]["t"]["dataset"]
    (old_run / "identity.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_manifest(old_run)
    assert info.value.key == "/targets/t/dataset"


def test_graders_details_and_trials_round_trip(tmp_path):
    details = {"expectations": [{"tool": "lookup", "met": False}]}
    with ResultStore(tmp_path / "r.sqlite") as store:
        gid = store.new_grading(mode="run")
        for trial in (0, 1):
            grader = GraderVerdict(
                grader_id="g",
                score=float(trial),
                min_score=0.0,
                max_score=1.0,
                reason="r",
                details=details,
            )
            score = score_question(
                QuestionResult(id="q", target="t", trial=trial, graders=[grader])
            )
            score.answer = QuestionAnswer(row={"input": "x"})
            store.commit_question(score, grading_id=gid)
        loaded = store.load_scores()
    assert [(q.trial, q.graders[0].score, q.graders[0].details) for q in loaded] == [
        (0, 0.0, details),
        (1, 1.0, details),
    ]
    assert loaded[0].content_sha256 == question_fingerprint({"input": "x"})


def test_fingerprint_changes_with_content_only():
    row = {"id": "q", "input": "hi", "expected": {"keyword": "a"}, "tags": ["x"]}
    assert question_fingerprint(row) == question_fingerprint({**row, "tags": ["y"]})
    assert question_fingerprint(row) != question_fingerprint({**row, "input": "hello"})
    assert question_fingerprint(row) != question_fingerprint({**row, "expected": {"keyword": "b"}})
    assert question_fingerprint(row) != question_fingerprint(
        {**row, "expected_tools": [{"tool": "t", "should_run": True}]}
    )
