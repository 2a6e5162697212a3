"""The `Executor` protocol: this process and worker processes take one target's typed plan and
a commit callback, and hand every (question, trial) to the callback exactly once, an agent's
crash as an errored result; the executor never writes the store itself (the callback does)."""

from __future__ import annotations

import asyncio

import pytest

from tests.runs_support import write_project
from tests.test_crash_safety import _questions
from tracegrade import QuestionResult, Selection, load_config
from tracegrade.execution.executors.dispatch import executor_for
from tracegrade.execution.executors.protocol import ExecutionPlan, Executor
from tracegrade.execution.run.prepare import prepare_run
from tracegrade.execution.run.prepared import ExecutorSettings


@pytest.mark.parametrize(("workers", "kind"), [(1, "LocalExecutor"), (2, "WorkerExecutor")])
def test_an_executor_hands_every_trial_to_the_commit_callback_once(tmp_path, workers, kind):
    config = load_config(
        write_project(
            tmp_path,
            questions=["paris", "crash"],
            extra_questions=_questions(4),
            target={"concurrency": 3, "repeats": 2},
        )
    )
    prepared = prepare_run(config, Selection())
    plan = prepared.plans["t"]
    settings = ExecutorSettings(workers=workers)
    executor: Executor = executor_for(plan, settings)
    assert type(executor).__name__ == kind
    trace_file = prepared.directory.trace_file("t")
    execution = ExecutionPlan(
        plan=plan,
        run=prepared.directory,
        trace_file=trace_file,
        run_settings=prepared.settings,
        settings=settings,
    )
    committed: list[QuestionResult] = []

    report = asyncio.run(executor.arun(execution, committed.append))

    expected = sorted((str(q.id), trial) for q in plan.questions for trial in (0, 1))
    assert sorted((r.id, r.trial) for r in committed) == expected and len(expected) == 12
    assert sorted((r.id, r.trial) for r in committed if r.error) == [("crash", 0), ("crash", 1)]
    assert all(r.target == "t" for r in committed)
    # every committed question's spans are in the target's one trace file (parts folded)
    assert report.trace_file == trace_file and report.written >= 12
    assert sorted(p.name for p in trace_file.parent.iterdir()) == ["t.jsonl"]
    assert not (prepared.directory.path / "results.sqlite").exists()  # the callback stores
