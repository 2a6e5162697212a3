"""Every store schema version still opens: a run directory written by the release of each version
(tests/fixtures: `run_v0` by the first release, `store_v1`..`store_v3` by the releases just before
versions 2, 3 and 4 came in, all of the same two-question project) reads back as the same
question results, read-only without a change to its files, and migrates in place to
SCHEMA_VERSION when opened for writing; and a run made today goes run -> store -> JSON report ->
`QuestionResult` and back unchanged."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.runs_support import write_project
from tracegrade import QuestionResult, load_config, start_run
from tracegrade.cli import main
from tracegrade.reports.json_report import write_json_report
from tracegrade.rundir.history import load_results_file, load_stored_run
from tracegrade.rundir.store import SCHEMA_VERSION, ResultStore

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STORED = {0: FIXTURES / "run_v0", 1: FIXTURES / "store_v1", 2: FIXTURES / "store_v2"}
STORED[3] = FIXTURES / "store_v3"


def _user_version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def _copy(version: int, tmp_path: Path) -> Path:
    run = tmp_path / STORED[version].name
    shutil.copytree(STORED[version], run)
    return run


def _digest(run: Path) -> str:
    return hashlib.sha256((run / "results.sqlite").read_bytes()).hexdigest()


def test_there_is_a_stored_run_of_every_older_schema_version():
    assert sorted(STORED) == list(range(SCHEMA_VERSION))
    for version, run in STORED.items():
        assert _user_version(run / "results.sqlite") == version


@pytest.mark.parametrize("version", sorted(STORED))
def test_a_stored_run_of_every_schema_version_reads_without_changing_its_files(version, tmp_path):
    run = _copy(version, tmp_path)
    before = _digest(run)
    stored = load_stored_run(run)
    assert _digest(run) == before and _user_version(run / "results.sqlite") == version
    questions = {q.id: q for q in stored.questions}
    assert {"paris", "rome"} <= set(questions)
    for q in (questions["paris"], questions["rome"]):
        assert q.target == "t" and q.trial == 0 and q.error is None
        assert {"tool_usage_grader", "contains"} <= {g.grader_id for g in q.graders}
        assert all(g.score is not None and g.max_score > g.min_score for g in q.graders)
        assert q.composite is not None and q.passed is not None
        assert q.tool_calls is not None  # the trace file's record, read back
    assert questions["paris"].passed  # the agent's answer and calls to paris were right
    assert stored.manifest.run_id == json.loads((run / "identity.json").read_text())["run_id"]


@pytest.mark.parametrize("version", sorted(STORED))
def test_a_stored_run_of_every_schema_version_migrates_keeping_its_results(version, tmp_path):
    run = _copy(version, tmp_path)
    read_only = load_stored_run(run).questions
    ResultStore(run / "results.sqlite").close()  # opened for writing: migrated in place
    assert _user_version(run / "results.sqlite") == SCHEMA_VERSION
    migrated = load_stored_run(run).questions
    assert [q.model_dump() for q in migrated] == [q.model_dump() for q in read_only]


def test_a_run_goes_to_the_store_to_json_and_back_to_the_same_question_results(tmp_path):
    config = write_project(tmp_path / "p", grading_module=True)
    report = tmp_path / "results.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(report)]) in (0, 2)
    run = next((tmp_path / "p" / "runs").iterdir())
    assert _user_version(run / "results.sqlite") == SCHEMA_VERSION
    from_store = load_stored_run(run).questions
    from_json = load_results_file(report).questions
    assert [q.id for q in from_store] == ["paris", "rome"]
    assert [q.model_dump() for q in from_json] == [q.model_dump() for q in from_store]
    for q in from_store:  # each record validates back from its own JSON
        assert QuestionResult.model_validate_json(q.model_dump_json()) == q


def test_the_result_the_runner_built_is_the_one_the_store_and_the_json_report_give_back(tmp_path):
    # One record end to end: what `on_done` saw as each question finished is, field for field,
    # what the store reads back and what the JSON report reads back as; its answer is what the
    # store keeps of the question row.
    config = load_config(write_project(tmp_path / "p", grading_module=True))
    built: list[QuestionResult] = []
    outcome = start_run(config, on_done=built.append)
    report = write_json_report(outcome, tmp_path / "results.json")
    from_store = load_stored_run(outcome.run_dir).questions
    from_json = load_results_file(report).questions
    assert sorted(q.id for q in built) == ["paris", "rome"]
    by_key = {q.key: q for q in built}
    verdict = {"answer", "tool_calls"}  # the calls come from the trace file, the answer is not
    for stored, read in zip(from_store, from_json, strict=True):
        made = by_key[stored.key]
        assert made.model_dump(exclude=verdict) == stored.model_dump(exclude=verdict)
        assert read.model_dump(exclude=verdict) == stored.model_dump(exclude=verdict)
        assert (made.passed, made.degraded, made.checks) == (
            read.passed,
            read.degraded,
            read.checks,
        )
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        answers = {q.key: q.answer for q in store.load_runs()}
    assert answers == {key: q.answer for key, q in by_key.items()}
