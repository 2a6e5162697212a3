"""Where a run's questions run: in this process, in worker processes (`--workers N`,
`tracegrade.execution.executors.workers`) or on Ray actors (`executor: ray`,
`tracegrade.execution.executors.ray_executor`). Start and resume hand their plans to `arun_plans`; every
executor commits to the run's one store and writes the run's trace files."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ...inputs.config import Config
from ...rundir.directory import RunDirectory
from ...rundir.store import ResultStore
from ...verdicts.result import QuestionResult
from ..question.runner import TargetPlan, arun_target
from ..run.services import open_telemetry, telemetry_notes

__all__ = ["arun_plans", "connect_executor"]


async def arun_plans(
    plans: Sequence[TargetPlan],
    *,
    config: Config,
    run: RunDirectory,
    store: ResultStore,
    grading_id: int,
    on_done: Callable[[QuestionResult], None] | None,
    lost: list[int],
    workers: int = 1,
    use_cache: bool = True,
    executor: str = "local",
) -> list[str]:
    """Run each plan's questions where the run says (this process, `workers` processes or
    Ray actors), committing each to `store` under `grading_id`; returns the telemetry notes,
    and appends to `lost` the spans that could not be written to a trace file."""
    from .workers import arun_target_in_workers, combined_report

    notes = []
    for plan in plans:
        plan.run_id = run.name  # each question run's conversation id names its run
        plan.message_chars = config.telemetry.captured_message_chars()
        trace_file = run.trace_file(plan.target.name) if config.telemetry.trace_file else None
        # the worker trace files of a run killed before it folded them: their records first
        run.fold_traces(plan.target.name)
        if executor == "ray" or (
            workers > 1 and plan.work_count() > 1 and plan.target.concurrency > 1
        ):
            if executor == "ray":
                from .ray_executor import arun_target_on_ray

                run_elsewhere: Any = functools.partial(
                    arun_target_on_ray, address=config.ray_address
                )
            else:
                run_elsewhere = arun_target_in_workers
            _, reports = await run_elsewhere(
                plan,
                workers=workers,
                config_path=config.path,
                run=run,
                store=store,
                grading_id=grading_id,
                use_cache=use_cache,
                trace_file=trace_file,
                on_done=on_done,
            )
            report = combined_report(reports, trace_file, config.telemetry.otlp_endpoint)
            telemetry: Any = config.telemetry  # what the notes read: its protocol
        else:
            telemetry = open_telemetry(config, trace_file)
            try:
                await arun_target(
                    plan,
                    store=store,
                    grading_id=grading_id,
                    tracer=telemetry.tracer,
                    on_done=on_done,
                    before_commit=telemetry.flush_trace_file,
                )
            finally:
                report = telemetry.shutdown()
        if report.trace_file_failed:
            lost.append(report.trace_file_failed)
        notes += telemetry_notes(config, plan.target.name, telemetry, report)
    return notes


def connect_executor(config: Config, executor: str | None, workers: int | None) -> None:
    """With `executor: ray`, Ray is importable and joined (or started) before anything runs."""
    if (executor or config.executor) == "ray":
        from .ray_executor import connect_ray

        connect_ray(config.ray_address, workers or config.workers)
