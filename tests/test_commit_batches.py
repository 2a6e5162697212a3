"""Questions running side by side are committed in batches: one trace-file flush and one
transaction for the questions that finished together, the trace file always flushed before the
rows that point into it, every finished question committed (also when the run is cancelled),
and `on_done` called once a question is committed."""

from __future__ import annotations

import asyncio

import pytest

from tests.runs_support import QUESTIONS, write_project
from tracegrade import EvaluationError, load_config
from tracegrade.execution.executors.protocol import committing
from tracegrade.execution.question.commits import CommitBatch
from tracegrade.rundir.store import ResultStore


def _plan(tmp_path, questions: int, concurrency: int, latency_s: float = 0.0):
    from tracegrade import load_dataset
    from tracegrade.execution.question.grading import attach_graders
    from tracegrade.execution.run.prepare import plan_of
    from tracegrade.execution.run.services import run_services

    rows = [{**QUESTIONS["paris"], "id": f"p{i}"} for i in range(questions)]
    path = write_project(
        tmp_path,
        questions=[],
        extra_questions=rows,
        target={"concurrency": concurrency},
        latency_s=latency_s,
    )
    target = load_config(path).targets["t"]
    services = run_services(load_config(path), tmp_path / "run", True)
    dataset = load_dataset(target.dataset)
    attached = attach_graders(target.graders, grading_module=None, services=services)
    return plan_of(target, list(dataset.questions), dataset, attached, services)


def _stored(store: ResultStore) -> set[str]:
    return {r.id for r in store.load_runs()}


def test_questions_finishing_together_share_a_flush_and_every_one_is_committed(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider

    from tracegrade.execution.question.runner import arun_target

    plan = _plan(tmp_path, questions=24, concurrency=8)
    flushes: list[int] = []
    done: list[str] = []
    with ResultStore(tmp_path / "r.sqlite") as store:
        gid = store.new_grading(mode="run")

        def before_commit() -> None:  # the rows committed so far, at each flush
            flushes.append(len(_stored(store)))

        def on_done(result) -> None:  # called once the question's row is in the store
            assert result.id in _stored(store)
            done.append(result.id)

        committed = asyncio.run(
            arun_target(
                plan,
                commit=committing(store, gid, on_done),
                tracer=TracerProvider().get_tracer("t"),
                before_commit=before_commit,
            )
        )
        stored = _stored(store)
    assert committed == 24 and len(stored) == 24 and sorted(done) == sorted(stored)
    assert len(flushes) < 24  # batches, not a flush per question
    assert flushes == sorted(flushes) and flushes[0] == 0  # each flush before its rows


def test_serial_questions_are_committed_one_by_one(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider

    from tracegrade.execution.question.runner import arun_target

    plan = _plan(tmp_path, questions=4, concurrency=1)
    flushes: list[int] = []
    with ResultStore(tmp_path / "r.sqlite") as store:
        gid = store.new_grading(mode="run")
        asyncio.run(
            arun_target(
                plan,
                commit=committing(store, gid),
                tracer=TracerProvider().get_tracer("t"),
                before_commit=lambda: flushes.append(len(_stored(store))),
            )
        )
    assert flushes == [0, 1, 2, 3]


def test_a_cancelled_run_commits_what_finished(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider

    from tracegrade.execution.question.runner import arun_target

    # 0.2 s per model call: the first questions finish well before the run is cancelled,
    # while their batch may still be waiting for others
    plan = _plan(tmp_path, questions=40, concurrency=4, latency_s=0.2)
    done: list[str] = []
    with ResultStore(tmp_path / "r.sqlite") as store:
        gid = store.new_grading(mode="run")

        async def main() -> None:
            task = asyncio.ensure_future(
                arun_target(
                    plan,
                    commit=committing(store, gid, lambda r: done.append(r.id)),
                    tracer=TracerProvider().get_tracer("t"),
                )
            )
            while not done and not task.done():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        stored = _stored(store)
    assert done and sorted(done) == sorted(stored)  # each committed one was reported
    assert len(stored) < 40  # the run did stop


def test_a_commit_that_fails_on_the_timer_is_raised_into_the_run(tmp_path):
    def failing(result) -> None:
        raise EvaluationError("could not write the results store: disk I/O error")

    async def main() -> None:
        batch = CommitBatch(failing, max_wait_s=0.01)
        batch.add(object())  # type: ignore[arg-type]
        await asyncio.sleep(0.1)  # the timer commits, and fails
        with pytest.raises(EvaluationError, match="disk I/O error"):
            batch.add(object())  # type: ignore[arg-type]

    asyncio.run(main())
