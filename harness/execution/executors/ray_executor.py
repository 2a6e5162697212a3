"""The Ray executor (`executor: ray`, the optional extra `tracegrade[ray]`): a target's questions
run as tasks of N Ray actors, on an existing cluster or a local Ray, and stream back to the one
store writer, the run's own process.

Each actor is a worker as `tracegrade.execution.executors.workers` describes (it rebuilds the plan from the
run's prepared settings and target sent with its spec, the run's stored graders and the agent
factory, and runs each question sent with its task through the one-process runner's `_run_one`,
per-question timeout included), holding
at most its share of the target's concurrency. A cluster's nodes have their own disks, so an
actor writes its spans to a private file and returns each question's trace-file lines with its
result; the run's process appends them to `traces/<target>.jsonl` before it commits the row,
so every committed row has its record on disk, as in one process.

An actor that dies (its node lost, the OOM killer, a crash) is reported: each question it held
is committed errored, naming the actor and Ray's reason; the other actors run the rest; when
none is left, what remains is errored the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, TypeVar

from ...capture.telemetry import ExportReport
from ...errors import ConfigError, EvaluationError
from .protocol import Commit, Commits, ExecutionPlan

if TYPE_CHECKING:
    from ...inputs.dataset import Question
    from ...verdicts.result import QuestionResult
from .workers import (
    WorkerSpec,
    build_plan,
    combined_report,
    run_item,
    unsendable,
    worker_specs,
    worker_telemetry,
)

__all__ = ["RayExecutor", "RayWorker", "arun_target_on_ray", "connect_ray", "import_ray"]


def import_ray() -> ModuleType:
    """The `ray` module; a config asking for it without it installed is invalid input."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "executor: ray needs Ray installed",
            key="/executor",
            hint="pip install 'tracegrade[ray]' (on the run's machine and every Ray worker)",
        ) from exc
    return ray


class RayWorker:
    """The actor (wrapped by `ray.remote` when the run starts; importable as
    `tracegrade.execution.executors.ray_executor.RayWorker`, which is how Ray's workers find it)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.settings, self.plan = build_plan(spec)
        self.folder = tempfile.mkdtemp(prefix="tracegrade-ray-")
        self.trace_path = Path(self.folder) / "spans.jsonl" if spec.trace_file else None
        self.telemetry = worker_telemetry(self.settings, self.trace_path)
        self.offset = 0

    def _new_lines(self) -> bytes:
        """Complete trace-file lines written since the last call (a line still being written
        by another question waits for the next)."""
        if self.trace_path is None or not self.trace_path.is_file():
            return b""
        with self.trace_path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end]

    async def run(
        self, question: Question, trial: int, ordinal: int
    ) -> tuple[QuestionResult, bytes]:
        result = await run_item(self.plan, self.telemetry, question, trial, ordinal)
        try:  # what cannot be pickled cannot go back: its question errors, the run goes on
            from ray import cloudpickle

            cloudpickle.dumps(result)
        except Exception as exc:
            result = unsendable(self.plan, question, trial, ordinal, exc)
        return result, self._new_lines()

    def finish(self) -> tuple[ExportReport, bytes]:
        report = self.telemetry.shutdown()
        lines = self._new_lines()
        shutil.rmtree(self.folder, ignore_errors=True)
        return report, lines


def connect_ray(address: str | None, workers: int) -> None:
    """Join the Ray this process already uses, the cluster at `address` (else `RAY_ADDRESS`),
    or start a local one with `workers` CPUs; called before the run directory exists, so a
    cluster that cannot be reached is exit 3 with nothing half-made. A local Ray ends with the
    process."""
    import os

    ray = import_ray()
    if ray.is_initialized():
        return
    options = {"include_dashboard": False, "log_to_driver": False}
    target = address or os.environ.get("RAY_ADDRESS")
    # ray.init installs a SIGTERM handler of its own (sys.exit): a CI runner's SIGTERM must
    # end the run as Ctrl-C does, with the resume hint, so the run's handlers are put back
    handlers = _stop_handlers()
    try:
        if target:
            ray.init(address=target, **options)
        else:
            ray.init(address="local", num_cpus=max(1, workers), **options)
    except Exception as exc:  # ConnectionError, a version mismatch, a bad address...
        raise EvaluationError(
            f"could not start or join Ray ({'at ' + target if target else 'local'}): "
            f"{_first_line(exc)}",
            key="/ray/address",
            hint="check ray.address / RAY_ADDRESS, and that the cluster runs the same Ray "
            "and Python versions",
        ) from exc
    finally:
        for signum, handler in handlers.items():
            if handler is not None:  # None: set outside Python, nothing to put back
                signal.signal(signum, handler)


_Handler = Callable[[int, FrameType | None], object] | int | None
"""A signal's handler as `signal.getsignal` gives it (a function, SIG_DFL/SIG_IGN, or None)."""


def _stop_handlers() -> dict[int, _Handler]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    return {
        getattr(signal, n): signal.getsignal(getattr(signal, n))
        for n in names
        if hasattr(signal, n)
    }


class RayExecutor:
    """`Executor` over `workers` Ray actors, this process the one store writer."""

    async def arun(self, execution: ExecutionPlan, commit: Commit) -> ExportReport:
        reports = await arun_target_on_ray(execution, Commits(execution.plan, commit))
        return combined_report(reports, execution.trace_file)


async def arun_target_on_ray(execution: ExecutionPlan, commits: Commits) -> list[ExportReport]:
    """Run the plan's questions on `execution.workers` Ray actors, committing each result
    here (its trace-file lines first); returns each actor's span export report."""
    plan, trace_file = execution.plan, execution.trace_file
    ray = import_ray()
    connect_ray(execution.settings.ray_address, execution.workers)
    specs = worker_specs(
        plan,
        workers=execution.workers,
        settings=execution.run_settings,
        run_dir=execution.run.path,
        use_cache=execution.use_cache,
        trace_file=lambda k: str(trace_file) if trace_file else None,
    )
    remote = ray.remote(RayWorker)
    actors = [remote.options(max_concurrency=s.concurrency, num_cpus=1).remote(s) for s in specs]
    alive = set(range(len(actors)))
    held = {k: 0 for k in alive}
    pending = iter(plan.work())
    running: dict[asyncio.Future[tuple[QuestionResult, bytes]], tuple[int, Question, int]] = {}
    if trace_file is not None:
        trace_file.parent.mkdir(parents=True, exist_ok=True)
    sink = trace_file.open("ab") if trace_file is not None else None

    def commit(result: QuestionResult, lines: bytes = b"") -> None:
        if sink is not None and lines:
            sink.write(lines)
            sink.flush()  # the record is on disk before its row
        commits(result)

    def feed() -> None:
        for k in sorted(alive):
            while held[k] < specs[k].concurrency:
                item = next(pending, None)
                if item is None:
                    return
                question, trial = item
                qid = str(question.id)
                ref = actors[k].run.remote(question, trial, plan.ordinals.get(qid, 0))
                running[asyncio.ensure_future(_awaited(ref))] = (k, question, trial)
                held[k] += 1

    reports: list[ExportReport] = []
    try:
        feed()
        while running:
            done, _ = await asyncio.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                k, question, trial = running.pop(future)
                held[k] -= 1
                exc = future.exception()
                if exc is None:
                    commit(*future.result())
                elif isinstance(exc, ray.exceptions.RayActorError):
                    alive.discard(k)
                    commits.error(question, trial, f"Ray actor {k} died ({_first_line(exc)})")
                else:  # the task itself failed (the worker's own code, not the agent's)
                    why = f"Ray task failed: {_first_line(exc)}"
                    commits.error(question, trial, why, "RayError")
            feed()
            if not alive:
                for question, trial in pending:
                    commits.error(question, trial, "no Ray actor left to run this question")
        for k in sorted(alive):
            with contextlib.suppress(Exception):
                report, lines = await _awaited(actors[k].finish.remote())
                reports.append(report)
                if sink is not None and lines:
                    sink.write(lines)
    finally:
        for future in running:
            future.cancel()
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        if sink is not None:
            sink.close()
    return reports


_T = TypeVar("_T")


async def _awaited(ref: Awaitable[_T]) -> _T:
    return await ref


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


def _first_line(exc: BaseException) -> str:
    """What went wrong, in one line: for a Ray error carrying a remote traceback, the last
    exception it names (the cause), else the message's first line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    raised = [line for line in lines if _RAISED.match(line)]
    if raised:
        return raised[-1]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()
