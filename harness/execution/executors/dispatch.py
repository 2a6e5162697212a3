"""Where a run's questions run: in this process (`local`), in worker processes (`--workers N`,
`workers`) or on Ray actors (`executor: ray`, `ray_executor`), each an `Executor`
(`protocol`) given one target's typed plan and the run's commit callback. Start and resume
hand their plans to `arun_plans`; every executor commits to the run's one store (through the
callback) and writes the run's trace files."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...rundir.directory import RunDirectory
from ...rundir.store import ResultStore
from ...verdicts.result import QuestionResult
from ..question.runner import TargetPlan
from ..run.prepared import ExecutorSettings, RunSettings
from ..run.services import telemetry_notes
from .local import LocalExecutor
from .protocol import ExecutionPlan, Executor, committing

__all__ = ["arun_plans", "connect_executor", "executor_for"]


def executor_for(plan: TargetPlan, settings: ExecutorSettings) -> Executor:
    """Ray when the run says so; worker processes when there are several questions to share
    among them; else this process."""
    if settings.kind == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor()
    if settings.workers > 1 and plan.work_count() > 1 and plan.target.concurrency > 1:
        from .workers import WorkerExecutor

        return WorkerExecutor()
    return LocalExecutor()


async def arun_plans(
    plans: Sequence[TargetPlan],
    *,
    settings: RunSettings,
    run: RunDirectory,
    store: ResultStore,
    grading_id: int,
    on_done: Callable[[QuestionResult], None] | None,
    lost: list[int],
    use_cache: bool = True,
) -> list[str]:
    """Run each plan's questions where `settings.executor` says (this process, worker
    processes or Ray actors), committing each to `store` under `grading_id`; returns the
    telemetry notes, and appends to `lost` the spans that could not be written to a trace
    file."""
    notes = []
    commit = committing(store, grading_id, on_done)
    for plan in plans:
        plan.run_id = run.name  # each question run's conversation id names its run
        plan.message_chars = settings.telemetry.captured_message_chars()
        # the worker trace files of a run killed before it folded them: their records first
        run.fold_traces(plan.target.name)
        execution = ExecutionPlan(
            plan=plan,
            run=run,
            trace_file=run.trace_file(plan.target.name) if settings.telemetry.trace_file else None,
            run_settings=settings,
            use_cache=use_cache,
            settings=settings.executor,
        )
        chosen = executor_for(plan, settings.executor)
        report = await chosen.arun(execution, commit)
        if report.trace_file_failed:
            lost.append(report.trace_file_failed)
        notes += telemetry_notes(settings, plan.target.name, report)
    return notes


def connect_executor(executor: ExecutorSettings) -> None:
    """With `executor: ray`, Ray is importable and joined (or started) before anything runs."""
    if executor.kind == "ray":
        from .ray_executor import connect_ray

        connect_ray(executor.ray_address, executor.workers)
