"""What every executor is: it takes one target's typed `ExecutionPlan` and a commit callback,
runs the plan's questions (in this process, in worker processes, on Ray actors) and hands each
finished `QuestionResult` to the callback, in the order they finish; it returns its span export
report. The caller (`dispatch`) owns the store: the callback commits, the executor never does.

`Commits` is the one place an executor's results go through: counted, handed to the callback,
and a question no executor could finish (its worker died, none is left) errored as such."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ...capture.telemetry import ExportReport
from ...inputs.dataset import Question
from ...records import RunRecord
from ...rundir.directory import RunDirectory
from ...rundir.store import ResultStore
from ...verdicts.result import QuestionResult
from ..question.runner import TargetPlan, _finish
from ..run.prepared import ExecutorSettings, RunSettings

__all__ = ["Commit", "Commits", "ExecutionPlan", "Executor", "committing", "errored"]

Commit = Callable[[QuestionResult], None]
"""Stores one finished question (and tells whoever watches the run)."""


def committing(
    store: ResultStore, grading_id: int, on_done: Callable[[QuestionResult], None] | None = None
) -> Commit:
    """The commit callback of a run: the question's row into the run's one store, under its
    grading, then `on_done` (the progress line) sees it. Its `many(results)` commits several
    in one transaction (`question.commits.CommitBatch` uses it)."""
    return _StoreCommit(store, grading_id, on_done)


class _StoreCommit:
    __slots__ = ("grading_id", "on_done", "store")

    def __init__(
        self,
        store: ResultStore,
        grading_id: int,
        on_done: Callable[[QuestionResult], None] | None,
    ) -> None:
        self.store = store
        self.grading_id = grading_id
        self.on_done = on_done

    def __call__(self, result: QuestionResult) -> None:
        self.many([result])

    def many(self, results: list[QuestionResult]) -> None:
        self.store.commit_questions(results, grading_id=self.grading_id)
        if self.on_done is not None:
            for result in results:
                self.on_done(result)


@dataclass(frozen=True, slots=True)
class ExecutionPlan:
    """What an executor needs to run one target's questions, and nothing of the config."""

    plan: TargetPlan
    """The questions and trials to run, their ordinals, the target's per-question settings
    (concurrency, timeout, cassettes), its graders and agent factory."""
    run: RunDirectory
    """The run's directory: where worker trace parts go and are folded."""
    trace_file: Path | None
    """The target's trace file; None: the config asks for none."""
    run_settings: RunSettings
    """The run's settings as prepared: its telemetry here (OTLP endpoint, redaction), and what
    a worker process or Ray actor rebuilds its plan from (never the config file)."""
    use_cache: bool = True
    settings: ExecutorSettings = field(default_factory=ExecutorSettings)
    """Which executor, how many worker processes or Ray actors (each gets its share of the
    target's concurrency), the Ray cluster's address."""

    @property
    def workers(self) -> int:
        return self.settings.workers


class Executor(Protocol):
    """Runs an `ExecutionPlan`'s questions, handing each result to `commit` as it finishes."""

    async def arun(self, execution: ExecutionPlan, commit: Commit) -> ExportReport:
        """Every (question, trial) of the plan committed once, errored when it could not run;
        returns what happened to its spans."""
        ...


class Commits:
    """The executor's side of the commit callback: what it committed, counted, and the errored
    result of a question it could not run."""

    __slots__ = ("commit", "count", "plan")

    def __init__(self, plan: TargetPlan, commit: Commit) -> None:
        self.plan = plan
        self.commit = commit
        self.count = 0

    def __call__(self, result: QuestionResult) -> None:
        self.commit(result)
        self.count += 1

    def error(self, question: Question, trial: int, why: str, kind: str = "WorkerDied") -> None:
        """Commit `question`'s trial as errored (`kind`, `why`): never lost, never skipped."""
        self(errored(self.plan, question, trial, why, kind))


def errored(
    plan: TargetPlan, question: Question, trial: int, why: str, kind: str
) -> QuestionResult:
    """The result of a (question, trial) that errored outside the agent: `kind`, `why`."""
    run = RunRecord(question_id=str(question.id), trial=trial, error=why)
    run.error_type = kind
    return _finish(plan, question, question.row(), run, None, [])
