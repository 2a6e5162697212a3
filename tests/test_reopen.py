"""Start, resume and re-grade share one preparation (issue 43): a stored run is prepared from
what its directory recorded (its selection, repeats, stored graders) into the same typed
`PreparedRun` a new run gets; what changed since it started is refused before anything runs."""

from __future__ import annotations

import sqlite3

import pytest

from tests.runs_support import QUESTIONS, write_project
from tracegrade import InputError, Selection, load_config, regrade_run, resume_run, start_run
from tracegrade.execution.run.prepared import PreparedRun
from tracegrade.execution.run.reopen import narrow_to_missing, prepare_regrade, prepare_resume
from tracegrade.rundir.store import ResultStore


def _drop(run_dir, *pairs):
    """Lose committed trials, as an interrupted run would."""
    db = sqlite3.connect(run_dir / "results.sqlite")
    for qid, trial in pairs:
        for table in ("questions", "scores", "grades"):
            db.execute(f"DELETE FROM {table} WHERE question_id = ? AND trial = ?", (qid, trial))
    db.commit()
    db.close()


def _rows(n):
    return [{**QUESTIONS["paris"], "id": f"p{i}"} for i in range(n)]


def test_a_resume_is_prepared_from_what_the_run_recorded(tmp_path):
    path = write_project(tmp_path, questions=[], extra_questions=_rows(3))
    # started with --repeats 2 and --limit 2: the config says neither
    outcome = start_run(load_config(path), Selection(repeats=2, limit=2))
    _drop(outcome.run_dir, ("p1", 1))
    prepared = prepare_resume(load_config(path), outcome.run_id)
    assert isinstance(prepared, PreparedRun)
    assert prepared.run_id == outcome.run_id and prepared.run_dir == outcome.run_dir
    (plan,) = prepared.plans.values()
    assert plan.target.repeats == 2  # the run's, not the config's 1
    assert [q.id for q in plan.questions] == ["p0", "p1"]  # its --limit, not the dataset's 3
    assert plan.ordinals == {"p0": 0, "p1": 1}
    assert [a.grader.id for a in plan.attached] == [a.spec.id for a in plan.attached]
    with ResultStore.open_readonly(outcome.run_dir) as store:
        notes = narrow_to_missing(prepared, store.finished_trials)
    assert notes == ["t: resumed 1 of 4 trial(s) (1 question(s))"]
    assert [(q.id, t) for q, t in plan.work()] == [("p1", 1)]
    assert prepared.total == 1


def test_a_resume_refuses_a_dataset_changed_since_the_run_started(tmp_path):
    path = write_project(tmp_path, questions=[], extra_questions=_rows(2))
    outcome = start_run(load_config(path))
    _drop(outcome.run_dir, ("p1", 0))
    dataset = tmp_path / "data" / "questions.yaml"
    dataset.write_text(dataset.read_text().replace("p1", "p9"))
    with pytest.raises(InputError) as refused:
        resume_run(load_config(path), outcome.run_id)
    assert "the dataset changed since the run started" in refused.value.message
    assert refused.value.file == str(dataset) and refused.value.key == "/targets/t/dataset"
    with ResultStore.open_readonly(outcome.run_dir) as store:  # nothing ran
        assert [r.id for r in store.load_runs()] == ["p0"]


def test_a_regrade_is_prepared_with_the_stored_graders_unless_current(tmp_path):
    path = write_project(tmp_path)
    outcome = start_run(load_config(path))
    # after the run, a grading module beside the dataset: the config's graders now include it
    write_project(tmp_path, grading_module=True)
    config = load_config(path)
    stored = prepare_regrade(config, outcome.run_id)
    current = prepare_regrade(config, outcome.run_id, current=True)
    assert stored.plans == {} and stored.run_id == outcome.run_id
    assert "says_sunny" not in [a.grader.id for a in stored.attached["t"]]
    assert "says_sunny" in [a.grader.id for a in current.attached["t"]]
    # and each re-grade grades with what was prepared
    for options, expected in (({}, False), ({"current": True}, True)):
        regraded = regrade_run(config, outcome.run_id, **options)
        ids = {g.grader_id for q in regraded.targets[0].questions for g in q.graders}
        assert ("says_sunny" in ids) is expected and "tool_usage_grader" in ids
