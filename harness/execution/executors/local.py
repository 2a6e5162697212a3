"""The local executor: a target's questions run in this process, `concurrency` at a time, on
its event loop (`runner.arun_target`), each trace-file flush before its commit."""

from __future__ import annotations

from ...capture.telemetry import ExportReport
from ..question.runner import arun_target
from ..run.services import open_telemetry
from .heap import frozen_heap
from .protocol import Commit, ExecutionPlan

__all__ = ["LocalExecutor"]


class LocalExecutor:
    """`Executor` in the run's own process."""

    async def arun(self, execution: ExecutionPlan, commit: Commit) -> ExportReport:
        telemetry = open_telemetry(execution.run_settings, execution.trace_file)
        try:
            with frozen_heap():  # the set-up heap out of the questions' full collections
                await arun_target(
                    execution.plan,
                    commit=commit,
                    tracer=telemetry.tracer,
                    before_commit=telemetry.flush_trace_file,
                )
        finally:
            report: ExportReport = telemetry.shutdown()
        return report
