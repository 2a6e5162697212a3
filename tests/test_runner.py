"""The runner end to end on small graphs: errors and timeouts counted, environments per
question, system prompt, chat mode, capture failure, committed rows."""

from __future__ import annotations

import sqlite3
import sys

import pytest

from tests.runs_support import write_project
from tracegrade import Selection, ToolRecord, load_config, start_run
from tracegrade.rundir.store import ResultStore


def _by_id(outcome):
    return {q.id: q for t in outcome.targets for q in t.questions}


def test_agent_error_and_timeout_are_counted_errored_and_the_run_goes_on(tmp_path):
    config = load_config(
        write_project(
            tmp_path, questions=["paris", "crash", "slow", "rome"], target={"timeout_s": 0.5}
        )
    )
    outcome = start_run(config)
    qs = _by_id(outcome)
    assert qs["crash"].errored and "model exploded" in qs["crash"].error
    # under load the reason adds the time other questions held the loop; it opens the same way
    assert qs["slow"].errored and qs["slow"].error.startswith("timed out after 0.5s")
    for qid in ("crash", "slow"):
        assert qs[qid].composite == 0.0 and qs[qid].objective == 0.0
    # the others still ran and were graded
    assert qs["paris"].composite == 5.0
    assert qs["rome"].graders[0].score == 0.0  # threshold 0: scored, and passes (seed 003)
    verdict = outcome.targets[0].verdict
    assert verdict.errored == 2 and verdict.questions == 4
    assert outcome.exit_code == 3  # beyond the default error budget of 0


def test_a_timeout_the_agent_raises_itself_is_not_reported_as_the_run_deadline(tmp_path):
    config = load_config(
        write_project(tmp_path, questions=["upstream", "paris"], target={"timeout_s": 30})
    )
    qs = _by_id(start_run(config))
    assert qs["upstream"].errored and qs["upstream"].error_type == "TimeoutError"
    assert qs["upstream"].error.startswith("TimeoutError: upstream model took too long (at ")
    assert qs["upstream"].error.endswith(" in _upstream_timeout)")  # where the agent raised it
    assert qs["paris"].composite == 5.0  # the run went on


def test_an_errored_question_within_the_error_budget_fails_the_gate(tmp_path):
    # seed 003: an errored test fails every gate; the budget only keeps it from being exit 3
    config = load_config(
        write_project(tmp_path, questions=["paris", "crash"], target={"gate": {"max_errored": 1}})
    )
    outcome = start_run(config)
    verdict = outcome.targets[0].verdict
    assert verdict.errored == 1 and verdict.mean_composite == 2.5
    assert outcome.exit_code == 2


def test_must_pass_failure_fails_the_gate_and_zeroes_the_objective(tmp_path):
    graders = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}, "format_grader"]
    config = load_config(write_project(tmp_path, target={"graders": graders}))
    outcome = start_run(config)
    qs = _by_id(outcome)
    assert qs["rome"].objective == 0.0
    assert qs["rome"].must_pass_failures == ["tool_usage_grader"]
    assert qs["paris"].objective == 1.0
    assert outcome.exit_code == 2


def test_fresh_environment_per_question_closed_after_grading(tmp_path):
    target = {
        "environment": "agent.py:make_environment",
        "graders": [{"id": "state_grader", "must_pass": True}],
    }
    config = load_config(write_project(tmp_path, questions=["remember", "paris"], target=target))
    outcome = start_run(config)
    qs = _by_id(outcome)
    assert qs["remember"].graders[0].score == 5.0  # the state the agent wrote was checked
    assert qs["paris"].graders[0].skipped
    agent_file = str((tmp_path / "agent.py").resolve())
    module = next(
        m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == agent_file
    )
    environments = [e for e in module.BUILT if e is not None]
    # One per question, and one for the pre-flight's check of tool names against the built
    # graph (`run` checks what `validate` checks); each fresh, each closed.
    assert len(environments) == 3 and len({id(e) for e in environments}) == 3
    assert sorted(module.CLOSED) == sorted(id(e) for e in environments)


def test_target_system_prompt_wins_over_a_stored_one(tmp_path):
    config = load_config(
        write_project(
            tmp_path,
            questions=["echo"],
            target={"system_prompt": "be brief", "graders": ["format_grader"]},
        )
    )
    outcome = start_run(config)
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    assert run.answer.response == "system=be brief"
    # Graders (and the stored input a re-grade reads) see what the agent received.
    assert run.answer.input == "system: be brief\nuser: echo system"


def test_chat_mode_has_no_record_and_tool_grader_falls_back(tmp_path):
    target = {"agent": None, "chat_model": "agent.py:build_chat_model"}
    config = load_config(write_project(tmp_path, questions=["paris"], target=target))
    outcome = start_run(config)
    (q,) = outcome.targets[0].questions
    tool_usage = q.graders[0]
    assert "no tool-call record" in tool_usage.reason
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    assert run.answer.has_record is False and run.answer.tool_call_count is None
    assert run.answer.response == "It is sunny in Paris."


def test_incomplete_record_errors_the_question_never_evidence(tmp_path):
    from tracegrade import Recorder

    class BrokenRecorder(Recorder):
        def seal(self, final_state=None):
            super().seal(final_state)
            return ToolRecord([], complete=False, problems=["on_tool_start: boom"])

    import asyncio

    from tracegrade import load_dataset
    from tracegrade.execution.question.grading import attach_graders
    from tracegrade.execution.question.runner import arun_target
    from tracegrade.execution.run.prepare import plan_of as _plan
    from tracegrade.execution.run.prepared import RunSettings
    from tracegrade.execution.run.services import run_services

    config = load_config(write_project(tmp_path, questions=["paris"]))
    target = config.targets["t"]
    services = run_services(RunSettings.of(config), tmp_path / "run", True)
    dataset = load_dataset(target.dataset)
    attached = attach_graders(target.graders, grading_module=None, services=services)
    plan = _plan(target, list(dataset.questions), dataset, attached, services)
    from opentelemetry.sdk.trace import TracerProvider

    with ResultStore(tmp_path / "r.sqlite") as store:
        gid = store.new_grading(mode="run")
        committed = asyncio.run(
            arun_target(
                plan,
                commit=lambda result: store.commit_question(result, grading_id=gid),
                tracer=TracerProvider().get_tracer("t"),
                record_class=BrokenRecorder,
            )
        )
        (score,) = store.load_scores(grading_id=gid, target="t")
    assert committed == 1
    assert score.errored and score.error_type == "CaptureError"
    assert "on_tool_start: boom" in score.error
    assert score.graders == []  # never graded on an incomplete record


def test_every_finished_question_is_a_committed_row_without_tool_arguments(tmp_path):
    config = load_config(write_project(tmp_path, questions=["paris", "rome"]))
    outcome = start_run(config)
    db = outcome.run_dir / "results.sqlite"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM questions").fetchone()[0] == 2
        dump = "\n".join(conn.iterdump())
    assert "s3cr3t-arg-value" not in dump  # the tool argument the agent passed
    assert "Paris" in dump  # while the answer itself is stored


def test_nothing_selected_is_exit_5(tmp_path):
    from tracegrade import NothingToRunError

    config = load_config(write_project(tmp_path))
    with pytest.raises(NothingToRunError):
        start_run(config, Selection(tags=("nope",)))
    assert not (tmp_path / "runs").exists()


async def test_async_twin_runs_inside_a_callers_event_loop(tmp_path):
    # A notebook or an async service already has a loop: astart_run must be awaitable there
    # (start_run would fail with "asyncio.run() cannot be called from a running event loop").
    from tracegrade import astart_run

    config = load_config(write_project(tmp_path, questions=["paris", "crash"]))
    outcome = await astart_run(config)
    qs = _by_id(outcome)
    assert qs["paris"].composite == 5.0 and qs["crash"].errored
    with pytest.raises(RuntimeError, match="await astart_run"):
        start_run(config)
