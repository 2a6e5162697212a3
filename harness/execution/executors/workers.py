"""Worker processes: one target's questions run in N processes (`--workers N`, config
`workers:`), each with its own event loop, past the one core a Python process can use.

The parent stays the one writer of the store. It hands each worker at most its share of the
target's `concurrency` questions at a time over a pipe and commits each result the worker sends
back, in the order they finish, with the progress callback, exactly as the single-process runner
does; so resume, the gate and the exit codes are the same code. Each worker rebuilds the plan
itself from what the run prepared (its settings and the target, sent with the spec: the
config file is not read again), the graders the run stored and the agent factory, and runs
each question the parent sends (the question itself: the dataset file is neither read nor
validated again) through the same `_run_one` as one process, the per-question timeout
included.

Each worker writes its spans to its own trace file `traces/<target>.w<k>.jsonl` and flushes it
before it sends a result, so a committed row's record is on disk even after kill -9; the worker
files are folded into `traces/<target>.jsonl` when the target ends, and by the next `--resume`
or `grade` when the run was killed first.

A worker that dies (a crash in native code, the OOM killer, kill -9) is reported: each question
it held is committed errored, naming the worker and how it ended, and questions no live worker
can take are errored the same way; none is lost or silently skipped. When the parent dies, its
workers see their pipe close and exit at once; `--resume` then asks what has no row.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...capture.telemetry import ExportReport
from .heap import frozen_heap
from .processes import ParentGone, child_main, how_it_ended, process_context, reap, start_child
from .protocol import Commit, Commits, ExecutionPlan, errored
from .watchdog import GRACE_S, STUCK_S

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from ...capture.telemetry import RunTelemetry
    from ...inputs.config import TargetConfig
    from ...inputs.dataset import Question
    from ...verdicts.result import QuestionResult
    from ..question.runner import TargetPlan
    from ..run.prepared import RunSettings
    from .processes import Pipe

BEAT_S = 1.0
"""How often a worker tells the parent its loop runs."""
SILENCE_GRACE_S = GRACE_S + STUCK_S + 5.0
"""Beyond the question's timeout, how long a worker holding questions may stay silent."""

__all__ = [
    "WorkerExecutor",
    "WorkerSpec",
    "arun_target_in_workers",
    "combined_report",
    "worker_specs",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a worker process needs to rebuild its target's plan (picklable): the run's
    settings and the target as the run prepared them, so a worker runs what the run's own
    process would (a config changed in memory included), never what the config file says."""

    settings: RunSettings
    target: TargetConfig
    """The target as the run prepared it (its repeats, its cassettes as `--cassettes` resolved
    them), with this worker's share of the concurrency."""
    run_dir: str
    use_cache: bool
    index: int
    trace_file: str | None
    dataset_name: str = ""
    """The name of the target's dataset, as the run loaded it (the questions come one by one
    from the run's process, which read and validated the dataset file once)."""

    @property
    def concurrency(self) -> int:
        """How many questions this worker holds at once."""
        return self.target.concurrency


# -- the worker process ---------------------------------------------------------------------
def build_plan(spec: WorkerSpec) -> tuple[RunSettings, TargetPlan]:
    from ...rundir.directory import RunDirectory
    from ..question.runner import TargetPlan, build_shared
    from ..run.services import run_services, stored_attachments

    # what the run prepared (never the config file again); the graders as the run stored them
    settings, target = spec.settings, spec.target
    run_dir = Path(spec.run_dir)
    services = run_services(settings, run_dir, spec.use_cache)
    attached = stored_attachments(RunDirectory(run_dir).manifest(), run_dir, services)[target.name]
    plan = TargetPlan(
        target=target,
        questions=[],
        attached=attached,
        services=services,
        dataset_name=spec.dataset_name,
        factory=target.load_factory(),
        environment_factory=target.load_environment_factory(),
        run_id=run_dir.name,
        message_chars=settings.telemetry.captured_message_chars(),
    )
    plan.shared = build_shared(plan)
    return settings, plan


def _worker_main(spec: WorkerSpec, conn: Pipe) -> None:
    """Entry point of a worker process (forked from the clean fork server, or spawned: nothing
    of the run's process inherited but the spec and the pipe)."""

    def setup() -> Callable[[], Coroutine[object, object, None]]:
        from .watchdog import set_stuck_handler

        def stuck(why: str) -> None:  # the loop is held for good: say why, then go
            with contextlib.suppress(Exception):
                conn.send(("failed", why))
            os._exit(3)

        set_stuck_handler(stuck)
        settings, plan = build_plan(spec)

        async def serve() -> None:
            with frozen_heap():  # the agent as built out of the questions' full collections
                await _aserve(spec, settings, plan, conn)

        return serve

    child_main(conn, setup, name="worker", label=f"worker {spec.index}")


def worker_telemetry(settings: RunSettings, trace_file: Path | None) -> RunTelemetry:
    """A worker's own telemetry: its trace file, the run's OTLP endpoint and redaction."""
    from ..run.services import open_telemetry

    return open_telemetry(settings, trace_file)


async def run_item(
    plan: TargetPlan,
    telemetry: RunTelemetry,
    question: Question,
    trial: int,
    ordinal: int,
) -> QuestionResult:
    """One (question, trial) in a worker, as the one-process runner runs it; its spans are in
    the worker's trace file when this returns."""
    from ...capture.recorder import Recorder
    from ..question.runner import _run_one

    result = await _run_one(
        plan,
        question,
        tracer=telemetry.tracer,
        shared=plan.shared,
        record_class=Recorder,
        trial=trial,
    )
    result.answer.ordinal = ordinal
    telemetry.flush_trace_file()  # the record is on disk before its row can be
    return result


def unsendable(
    plan: TargetPlan, question: Question, trial: int, ordinal: int, exc: Exception
) -> QuestionResult:
    """The errored result standing for one whose values could not be sent back."""
    why = f"the worker could not send the result back: {type(exc).__name__}: {exc}"
    result = errored(plan, question, trial, why, type(exc).__name__)
    result.answer.ordinal = ordinal
    return result


async def _aserve(
    spec: WorkerSpec,
    settings: RunSettings,
    plan: TargetPlan,
    conn: Pipe,
) -> None:
    telemetry = worker_telemetry(settings, Path(spec.trace_file) if spec.trace_file else None)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[str, Question, int, int] | None] = asyncio.Queue()
    gone = loop.create_future()

    def readable() -> None:
        try:
            while conn.poll():
                message = conn.recv()
                if message[0] == "stop":
                    for _ in range(spec.concurrency):
                        inbox.put_nowait(None)
                else:
                    inbox.put_nowait(message)
        except (EOFError, OSError):
            loop.remove_reader(conn.fileno())
            if not gone.done():
                gone.set_result(None)

    async def serve() -> None:
        while True:
            message = await inbox.get()
            if message is None:
                return
            _, question, trial, ordinal = message
            result = await run_item(plan, telemetry, question, trial, ordinal)
            try:
                conn.send(("result", result))
            except (EOFError, BrokenPipeError):
                raise ParentGone from None
            except Exception as exc:  # a value the agent returned that cannot be pickled
                conn.send(("result", unsendable(plan, question, trial, ordinal, exc)))

    def beat() -> None:  # the parent's sign of a live loop (a stopped process sends none)
        with contextlib.suppress(Exception):
            conn.send(("beat",))
        loop.call_later(BEAT_S, beat)

    loop.add_reader(conn.fileno(), readable)
    conn.send(("ready", os.getpid()))
    beat()
    servers = [asyncio.ensure_future(serve()) for _ in range(spec.concurrency)]
    done = asyncio.ensure_future(asyncio.gather(*servers))
    try:
        await asyncio.wait([done, gone], return_when=asyncio.FIRST_COMPLETED)
        if gone.done():
            raise ParentGone  # the parent died or gave up: nobody will commit what we run
        await done
    finally:
        for task in servers:
            task.cancel()
        with contextlib.suppress(BaseException):
            loop.remove_reader(conn.fileno())
        report = telemetry.shutdown()
    conn.send(("report", report))


# -- the parent -----------------------------------------------------------------------------
@dataclass(slots=True)
class _Worker:
    index: int
    process: BaseProcess
    conn: Pipe
    capacity: int
    held: dict[tuple[str, int], Question] = field(default_factory=dict)
    """(question id, trial) -> question, sent and not yet committed."""
    failure: str | None = None
    report: ExportReport | None = None
    stopping: bool = False
    ended: bool = False
    heard: float = field(default_factory=time.monotonic)
    """When the worker last sent anything (it beats every `BEAT_S` while its loop runs)."""


def worker_specs(
    plan: TargetPlan,
    *,
    workers: int,
    settings: RunSettings,
    run_dir: Path,
    use_cache: bool,
    trace_file: Callable[[int], str | None],
) -> list[WorkerSpec]:
    """One spec per worker (processes or Ray actors), each with its share of the concurrency;
    `trace_file(k)` names worker k's trace file."""
    shares = shares_of(plan.target.concurrency, min(workers, max(1, plan.work_count())))
    return [
        WorkerSpec(
            settings=settings,
            target=dataclasses.replace(plan.target, concurrency=capacity),
            run_dir=str(run_dir),
            use_cache=use_cache,
            index=k,
            trace_file=trace_file(k),
            dataset_name=plan.dataset_name,
        )
        for k, capacity in enumerate(shares)
    ]


def shares_of(concurrency: int, workers: int) -> list[int]:
    """Each worker's share of the target's concurrency (at least one question each)."""
    n = max(1, min(workers, concurrency))
    return [concurrency // n + (1 if k < concurrency % n else 0) for k in range(n)]


class WorkerExecutor:
    """`Executor` over `workers` processes, this process the one store writer."""

    async def arun(self, execution: ExecutionPlan, commit: Commit) -> ExportReport:
        with frozen_heap():  # this process commits every result: the same full collections
            reports = await arun_target_in_workers(execution, Commits(execution.plan, commit))
        return combined_report(reports, execution.trace_file)


async def arun_target_in_workers(execution: ExecutionPlan, commit: Commits) -> list[ExportReport]:
    """Run the plan's questions in `execution.workers` processes, committing each result here;
    returns each worker's span export report. Each worker writes its own trace part
    of the run's directory, folded in at the end."""
    plan, run, trace_file = execution.plan, execution.run, execution.trace_file
    ctx = process_context()
    specs = worker_specs(
        plan,
        workers=execution.workers,
        settings=execution.run_settings,
        run_dir=run.path,
        use_cache=execution.use_cache,
        trace_file=lambda k: str(run.trace_part(plan.target.name, f"w{k}")) if trace_file else None,
    )
    pending = iter(plan.work())
    pool: list[_Worker] = []

    def start(spec: WorkerSpec) -> _Worker:
        process, conn = start_child(ctx, _worker_main, spec, f"tracegrade-worker-{spec.index}")
        worker = _Worker(spec.index, process, conn, spec.concurrency)
        pool.append(worker)
        return worker

    for spec in specs:
        start(spec)
    # A worker silent this long while it holds questions is stopped or stuck in native code
    # (a held loop is interrupted, or ends its worker, well before): killed, its questions
    # errored, a fresh worker takes its place.
    silence_limit = plan.target.timeout_s + SILENCE_GRACE_S

    loop = asyncio.get_running_loop()
    finished = loop.create_future()

    def feed(worker: _Worker) -> None:
        while not worker.stopping and len(worker.held) < worker.capacity:
            item = next(pending, None)
            if item is None:
                if not worker.held:
                    worker.stopping = True
                    with contextlib.suppress(OSError):
                        worker.conn.send(("stop",))
                return
            question, trial = item
            key = (str(question.id), trial)
            worker.held[key] = question
            worker.conn.send(("run", question, trial, plan.ordinals.get(key[0], 0)))

    def check() -> None:
        now = time.monotonic()
        for worker in [w for w in pool if not w.ended and w.held]:
            silent = now - worker.heard
            if silent > silence_limit:
                worker.failure = (
                    f"it stopped answering for {silent:.0f}s, stopped or stuck in native code "
                    f"(the question's timeout is {plan.target.timeout_s:g}s), and was killed"
                )
                worker.process.kill()  # SIGKILL ends a SIGSTOPped process too
                if not worker.stopping:  # work is left: a fresh worker first, so it is fed
                    respawn(worker)
                ended(worker)
                worker.conn.close()
        if not finished.done():
            loop.call_later(BEAT_S, check)

    def respawn(gone: _Worker) -> None:
        spec = dataclasses.replace(
            specs[gone.index % len(specs)],
            index=len(pool),
            trace_file=(
                str(trace_file.with_suffix(f".w{len(pool)}.jsonl")) if trace_file else None
            ),
        )
        worker = start(spec)
        loop.add_reader(worker.conn.fileno(), readable, worker)
        feed(worker)

    def ended(worker: _Worker) -> None:
        if worker.ended:
            return
        worker.ended = True
        with contextlib.suppress(Exception):
            loop.remove_reader(worker.conn.fileno())
        worker.process.join(timeout=5)
        if worker.held or worker.failure:
            why = worker.failure or f"worker process {worker.index} {how_it_ended(worker.process)}"
            log.warning("tracegrade worker %d: %s", worker.index, why)
            for (_qid, trial), question in list(worker.held.items()):
                commit.error(
                    question,
                    trial,
                    f"worker process {worker.index} died ({why}) while running this question",
                )
            worker.held.clear()
        live = [w for w in pool if not w.ended]
        for w in live:
            feed(w)
        if not live:
            for question, trial in pending:  # nobody left to run them: errored, not dropped
                commit.error(question, trial, "no worker process left to run this question")
            if not finished.done():
                finished.set_result(None)

    def readable(worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                message = worker.conn.recv()
                worker.heard = time.monotonic()
                kind = message[0]
                if kind == "result":
                    _, result = message
                    worker.held.pop((result.id, result.trial), None)
                    commit(result)
                    feed(worker)
                elif kind == "report":
                    worker.report = message[1]
                elif kind == "failed":
                    worker.failure = message[1]
        except (EOFError, OSError):
            ended(worker)

    try:
        for worker in pool:
            loop.add_reader(worker.conn.fileno(), readable, worker)
            feed(worker)
        loop.call_later(BEAT_S, check)
        await finished
    finally:
        for worker in pool:
            if not worker.ended:
                with contextlib.suppress(Exception):
                    loop.remove_reader(worker.conn.fileno())
            with contextlib.suppress(Exception):
                worker.conn.close()  # a worker still running sees its pipe close and exits
        reap([w.process for w in pool], 5)
        if trace_file is not None:
            run.fold_traces(plan.target.name)
    return [w.report for w in pool if w.report]


def combined_report(reports: list[ExportReport], trace_file: Path | None) -> ExportReport:
    """The worker processes' span export reports as one `ExportReport` (`trace_file`: the
    target's, which the workers' own files were folded into)."""

    def first(values: list[str | None]) -> str | None:
        return next((v for v in values if v), None)

    return ExportReport(
        exported=sum(r.exported for r in reports),
        failed=sum(r.failed for r in reports),
        first_failure=first([r.first_failure for r in reports]),
        written=sum(r.written for r in reports),
        endpoint=first([r.endpoint for r in reports]),
        trace_file=trace_file,
        trace_file_failed=sum(r.trace_file_failed for r in reports),
        trace_file_failure=first([r.trace_file_failure for r in reports]),
        protocol=first([r.protocol for r in reports]),
    )
