"""`tracegrade receive --workers N`: complete traces graded in N processes, past the one core a
Python process can use.

The receiver's process keeps what must be one: the HTTP endpoint, each request decoded once,
the assembler and its bounds, sampling, the run's lock, rollups, alerts and the verdict. Each
complete trace goes to the worker its trace id routes to (its conversation id with
`--conversations`, so one worker holds a conversation's traces), as plain tuples in one message
per tick. A worker reads the trace (`agent_trace`), pairs and grades it as the one-process
receiver does (`Monitor.grade`) and commits its batches into the run's one store itself, each
trace's trial numbered by the store inside the batch's transaction, its records in its own trace
file (`traces/<target>.w<k>.jsonl`, folded into the target's at the stop). After each commit it
tells the receiver what it graded (rollups, listed ids, alert figures, traces whose grading
failed), which is what frees room for more: each worker holds at most `WINDOW` traces not yet
committed, so memory stays bounded however slow grading is.

A worker that dies (a crash, the OOM killer, kill -9) is an error, never a pass: every trace it
held and had not committed is counted as failed grading (its spans lost: the run is
incomplete, exit 3) and a fresh worker takes its place. When the receiver dies, its workers see
their pipe close, commit what they graded and exit.

`grade-traces --workers N` (`tracegrade.traces.archive_workers`) grades on the same pool: what
a worker grades is what its spec's `build` makes (a `WorkerGrading`): by default a monitor run's
complete traces; grade-traces' an archive's traces already paired with their question and
trial.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import os
import pickle
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..execution.executors.processes import (
    child_main,
    how_it_ended,
    process_context,
    reap,
    start_child,
)
from .dialects import conversation_of
from .spans import Span

__all__ = ["GradingPool", "WorkerGrading", "WorkerSpec", "route"]

log = logging.getLogger(__name__)

WINDOW = 512
"""Traces a worker holds at most (sent, not yet committed)."""

_STOP = b"stop"


def route(key: str, workers: int) -> int:
    """The worker (0-based) the trace or conversation `key` goes to: a hash, the same in every
    process and on every start."""
    digest = hashlib.blake2b(key.lower().encode("utf-8", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % workers


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a grading worker rebuilds the monitor run from (picklable)."""

    config_path: str
    target: str
    run_dir: str
    use_cache: bool
    sample: float
    policy: Any
    conversations: tuple[float, int, int] | None
    """The conversation book's quiet period, open conversations and turns (None: off)."""
    index: int
    part: str
    """Its trace file's part name (`w<k>`)."""
    batch: int
    batch_s: float
    tick_s: float
    verdicts: bool = False
    """Send each trace's grades back (`--forward` carries them, `--annotate` writes them)."""
    build: Callable[[WorkerSpec], WorkerGrading] | None = None
    """What the worker grades with, built in the worker from this spec (picklable: a module's
    class or function); None: receive's monitor run, each item a complete trace's spans.
    grade-traces passes `archive_workers.PairedGrading` (named here, never imported: the pool
    knows no user of it)."""


class WorkerGrading(Protocol):
    """A grading worker's side of one pool: what it grades each item with and commits."""

    @property
    def uncommitted(self) -> int: ...

    def size(self, payload: Any) -> int:
        """The spans an item holds (counted as lost when its grading fails)."""
        ...

    def root(self, payload: Any) -> str | None:
        """An item's root span id (its verdict goes there)."""
        ...

    async def grade(self, trace_id: str, payload: Any) -> Any:
        """The item graded (a QuestionResult), or None when nothing was graded (yet)."""
        ...

    async def grade_conversations(self, *, force: bool = False) -> list[Any]: ...

    def holds(self, trace_id: str) -> bool: ...

    def commit(self) -> None: ...

    def take_rollups(self) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]: ...


def _rows(spans: Sequence[Span]) -> list[tuple]:
    return [
        (
            s.trace_id,
            s.span_id,
            s.parent_id,
            s.name,
            s.start_ns,
            s.end_ns,
            s.attributes,
            s.status_code,
            s.status_message,
            s.resource,
            s.kind,
        )
        for s in spans
    ]


# -- the worker process ---------------------------------------------------------------------
def _worker_main(spec: WorkerSpec, conn: Any) -> None:
    # What the fork server loaded is shared with it page by page until written: kept out of
    # the cyclic collector's passes (each writes the header of every object it walks), it
    # stays shared (the summed PSS of `grade-traces --workers 2`: 241 MB, 228 MB with this).
    gc.freeze()

    def setup() -> Callable[[], Any]:
        if spec.build is not None:
            grading = spec.build(spec)
        else:  # receive's: the worker's share of the monitor run
            from .live.monitor import monitor_grading

            grading = monitor_grading(spec)
        return lambda: _serve(spec, grading, conn)

    # The receiver decides when its workers stop (a stop message, or its pipe closing): a
    # signal to the whole process group must not kill the traces they hold.
    child_main(
        conn,
        setup,
        name="receive-worker",
        label=f"grading worker {spec.index}",
        ignore=(signal.SIGINT, signal.SIGTERM),
    )


async def _serve(spec: WorkerSpec, monitor: WorkerGrading, conn: Any) -> None:
    from .live.alerts import seen_of

    inbox: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:  # the pipe drained at once, so the receiver never waits on a send
        try:
            while True:
                inbox.put(conn.recv_bytes())
        except (EOFError, OSError):
            inbox.put(None)

    threading.Thread(target=read, name="tracegrade-receive-inbox", daemon=True).start()
    conn.send(("ready", os.getpid()))
    taken = 0  # traces taken since the last report
    graded: list[tuple[str, int]] = []  # graded, not committed: lost if the commit fails
    failed: list[tuple[str, int]] = []
    seen: list[tuple] = []
    verdicts: list[tuple] = []  # (trace id, root span id, evaluations or None, held)
    roots: dict[str, str | None] = {}  # the roots of traces held for their conversation
    first: float | None = None

    def observe(score: Any) -> None:
        seen.append(seen_of(score))

    def verdict(trace_id: str, root: str | None, score: Any) -> None:
        if not spec.verdicts:
            return
        from ..rundir.evaluations import evaluations_of

        held = score is None and monitor.holds(trace_id)
        if held:
            roots[trace_id] = root
        verdicts.append((trace_id, root, evaluations_of([score]) if score else None, held))

    def report(*, final: bool = False) -> None:
        nonlocal taken, first
        runs = monitor.uncommitted
        try:
            monitor.commit()
        except Exception:  # isolation point: the batch is lost, counted by the receiver
            log.exception("storing %d graded trace(s) failed", len(graded))
            failed.extend(graded)
            runs = 0
        rollups, listed = monitor.take_rollups()
        done = ("done", taken, rollups, listed, runs, list(seen), list(verdicts), list(failed))
        conn.send((*done, final))
        taken, first = 0, None
        verdicts.clear()
        graded.clear()
        failed.clear()
        seen.clear()

    def due() -> bool:
        """A batch is stored once it is `batch` traces or its first waited `batch_s`: checked
        after every trace, so the receiver hears (and refills) while the rest of a message
        waits, and a kill loses at most a batch."""
        if not (taken or monitor.uncommitted):
            return False
        waited = first is not None and time.monotonic() - first >= spec.batch_s
        return monitor.uncommitted >= spec.batch or waited

    while True:
        try:
            message = inbox.get(timeout=spec.tick_s)
        except queue.Empty:
            message = b""
        if message is None:  # the receiver is gone: keep what was graded, then go
            with contextlib.suppress(Exception):
                monitor.commit()
            return
        stopping = message == _STOP
        if message and not stopping:
            for trace_id, payload in pickle.loads(message):
                size = monitor.size(payload)
                taken += 1
                try:
                    score = await monitor.grade(trace_id, payload)
                except Exception:  # isolation point: a trace's failure is counted
                    log.exception("grading trace %s failed", trace_id)
                    failed.append((trace_id, size))
                    continue
                if score is not None:
                    graded.append((trace_id, size))
                    observe(score)
                verdict(trace_id, monitor.root(payload), score)
                if first is None:
                    first = time.monotonic()
                if due():
                    report()
        for score in await monitor.grade_conversations(force=stopping):
            graded.append((score.trace_id or "", 0))
            observe(score)
            verdict(score.trace_id or "", roots.pop(score.trace_id or "", None), score)
        if first is None and monitor.uncommitted:
            first = time.monotonic()
        idle = inbox.empty() and bool(taken or monitor.uncommitted)  # nothing more coming now
        if stopping or due() or idle:
            report(final=stopping)
        if stopping:
            return


# -- the receiver's side --------------------------------------------------------------------
@dataclass(slots=True)
class _Worker:
    spec: WorkerSpec
    process: Any
    conn: Any
    outbox: queue.Queue[bytes | None]
    held: deque[tuple[str, int]] = field(default_factory=deque)
    """(trace id, spans) sent and not yet reported, in the order sent."""
    batch: list[tuple[str, list[tuple]]] = field(default_factory=list)
    failure: str | None = None
    ready: bool = False
    ended: bool = False
    final: bool = False


class GradingPool:
    """N grading workers for one monitor run; `on_report(rollups, listed, runs, seen,
    verdicts)` and
    `on_failed(trace_id, spans)` are called in the receiver's loop."""

    def __init__(
        self,
        specs: list[WorkerSpec],
        *,
        on_report: Callable[[dict, dict, int, list, list], None],
        on_failed: Callable[[str, int], None],
        on_room: Callable[[], object] = lambda: None,
        by_conversation: bool = False,
        preload: list[str] | None = None,
    ) -> None:
        self.specs = specs
        self.on_report = on_report
        self.on_failed = on_failed
        self.on_room = on_room
        self.by_conversation = by_conversation
        self.failures: list[str] = []
        self.stopping = False
        self._ctx = process_context(preload)  # what the workers import, loaded once
        self._loop: asyncio.AbstractEventLoop | None = None
        self._parts = len(specs)
        self.workers = [self._start(spec) for spec in specs]

    def _start(self, spec: WorkerSpec) -> _Worker:
        name = f"tracegrade-receive-{spec.index}"
        process, parent_end = start_child(self._ctx, _worker_main, spec, name)
        worker = _Worker(spec, process, parent_end, queue.Queue())
        threading.Thread(
            target=self._send, args=(worker,), name="tracegrade-receive-send", daemon=True
        ).start()
        if self._loop is not None:
            self._loop.add_reader(parent_end.fileno(), self._readable, worker)
        return worker

    @staticmethod
    def _send(worker: _Worker) -> None:
        """The worker's messages, sent from this thread: a busy worker never holds the loop."""
        while (data := worker.outbox.get()) is not None:
            try:
                worker.conn.send_bytes(data)
            except OSError:  # its end is gone: the reader sees it and counts what it held
                return

    def attach(self) -> None:
        """Start reading the workers' reports (in the receiver's loop)."""
        self._loop = asyncio.get_running_loop()
        for worker in self.workers:
            self._loop.add_reader(worker.conn.fileno(), self._readable, worker)

    # -- routing ----------------------------------------------------------------------------
    def worker_of(self, trace_id: str, spans: Sequence[Span]) -> _Worker:
        key = (conversation_of(spans) if self.by_conversation else None) or trace_id
        return self.workers[route(key, len(self.workers))]

    def take(
        self,
        ready: deque[tuple[str, Any]],
        pop: Callable[[], Any],
        *,
        encode: Callable[[Any], Any] = _rows,
        size: Callable[[Any], int] = len,
    ) -> bool:
        """Send the items at the head of `ready` (taken with `pop`) to their workers while each
        has room; True when `ready` is empty. An item is (trace id, what its worker grades:
        a complete trace's spans, sent as rows, unless `encode` says otherwise); `size` is
        the spans it holds."""
        while ready:
            trace_id, item = ready[0]
            worker = self.worker_of(trace_id, item)
            if worker.ended:  # it never started: nobody will grade what goes there
                pop()
                self.on_failed(trace_id, size(item))
                continue
            if len(worker.held) >= WINDOW:
                break
            pop()
            worker.held.append((trace_id, size(item)))
            worker.batch.append((trace_id, encode(item)))
        for worker in self.workers:
            if worker.batch:
                data = pickle.dumps(worker.batch, protocol=pickle.HIGHEST_PROTOCOL)
                worker.batch = []
                worker.outbox.put(data)
        return not ready

    # -- reports ----------------------------------------------------------------------------
    def _readable(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                message = worker.conn.recv()
                if message[0] == "done":
                    _, taken, rollups, listed, runs, seen, verdicts, failed, final = message
                    for _ in range(min(taken, len(worker.held))):
                        worker.held.popleft()
                    for trace_id, spans in failed:
                        self.on_failed(trace_id, spans)
                    self.on_report(rollups, listed, runs, seen, verdicts)
                    worker.final = worker.final or final
                    self.on_room()
                elif message[0] == "ready":
                    worker.ready = True
                elif message[0] == "failed":
                    worker.failure = message[1]
        except (EOFError, OSError):
            self._ended(worker)

    def _ended(self, worker: _Worker) -> None:
        if worker.ended:
            return
        worker.ended = True
        with contextlib.suppress(Exception):
            if self._loop is not None:
                self._loop.remove_reader(worker.conn.fileno())
        worker.outbox.put(None)
        worker.process.join(timeout=5)
        if worker.final:
            return
        why = worker.failure or f"it {how_it_ended(worker.process)}"
        lost = list(worker.held) + [(t, len(r)) for t, r in worker.batch]
        worker.held.clear()
        worker.batch = []
        self.failures.append(
            f"grading worker {worker.spec.index} died ({why}): {len(lost)} trace(s) it held "
            "were not graded"
        )
        log.warning("tracegrade: %s", self.failures[-1])
        for trace_id, spans in lost:
            self.on_failed(trace_id, spans)
        if not self.stopping and worker.ready:  # a fresh one takes its place and trace ids
            spec = replace(worker.spec, part=f"w{self._parts}")
            self._parts += 1
            self.workers[self.workers.index(worker)] = self._start(spec)

    async def started(self) -> None:
        """Wait until every worker has built its plan and serves; a worker that cannot start
        is an error (exit 3) before anything is received."""
        from ..errors import EvaluationError

        while not all(w.ready for w in self.workers):
            for worker in self.workers:
                if not worker.ready and (worker.ended or not worker.process.is_alive()):
                    self._readable(worker)
                    self._ended(worker)
                    why = worker.failure or f"it {how_it_ended(worker.process)}"
                    raise EvaluationError(
                        f"grading worker {worker.spec.index} could not start: {why}"
                    )
            await asyncio.sleep(0.02)

    # -- stopping ---------------------------------------------------------------------------
    async def stop(self) -> None:
        """Every worker grades what it holds, commits and reports, then exits (or died)."""
        self.stopping = True
        for worker in self.workers:
            if not worker.ended:
                worker.outbox.put(_STOP)
        while not all(w.ended or w.final for w in self.workers):
            for worker in self.workers:
                if not worker.ended and not worker.process.is_alive():
                    self._readable(worker)  # its last reports, then its end
                    self._ended(worker)
            await asyncio.sleep(0.02)
        self.close()

    def close(self) -> None:
        for worker in self.workers:
            worker.outbox.put(None)
            with contextlib.suppress(Exception):
                if self._loop is not None and not worker.ended:
                    self._loop.remove_reader(worker.conn.fileno())
            with contextlib.suppress(Exception):
                worker.conn.close()
        reap([w.process for w in self.workers], 10)
