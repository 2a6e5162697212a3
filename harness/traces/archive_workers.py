"""`tracegrade grade-traces --workers N`: an archive's paired traces graded in N processes, on
the grading pool `receive --workers N` uses (`grading_workers.GradingPool`, on the run's process
machinery).

This process keeps what must be one: reading and spilling the archive, pairing each trace with
its question, numbering each question's trials in start order, the run's lock and the verdict.
Each paired trace goes, still pickled as the spill keeps it, with its question id, trial and
ordinal, to the worker its trace id routes to. A worker rebuilds the run's plan from the stored
run (`reopen.prepare_stored`: the graders the run stored), grades each trace as one process does
(`grade_paired`) and commits its batches into the run's one store, its records in its own
trace file (`traces/<target>.w<k>.jsonl`, folded into the target's at the end). So the rows, the
records and the verdict are the ones one process gives; only the order of the rows in the store
and of the lines in the trace file differs.

A worker that dies is an error (exit 3), never a pass: the traces it held and had not committed
are counted as lost spans (the run is incomplete, as `show` says too) and a fresh worker grades
what comes after.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import threading
from collections import deque
from pathlib import Path
from typing import Any

from ..rundir.directory import RunDirectory
from .grade import COMMIT_BATCH, GradedTrace, commit_graded, grade_paired
from .grading_workers import GradingPool, WorkerSpec
from .policy import TracePolicy
from .spill import SpilledPairs

__all__ = ["ArchiveWorkers", "PairedGrading"]

_QUEUED = 64
"""Paired traces read ahead per worker before they are routed (one message each, mostly)."""
_PRELOAD = ["tracegrade.traces.archive_workers", "tracegrade.execution.run.stored_preload"]
"""What the workers import and build before their first trace, loaded once in their fork server
(not the run's agent workers'): the stored run's preload compiles the dataset's validator there,
which each worker did itself (the workers' summed PSS with two of them: 229 MB, 160 MB now)."""


class PairedGrading:
    """A grading worker's side (`grading_workers.WorkerGrading`): a trace paired with its
    question and trial by the parent, graded into the run and committed in batches."""

    def __init__(self, spec: WorkerSpec) -> None:
        from ..execution.run.reopen import prepare_stored
        from ..inputs.config import load_config
        from .policy import with_policy

        config = load_config(spec.config_path)
        if spec.policy:  # its graders attached to the target, as the parent's run has them
            config = with_policy(config, spec.target, spec.policy)
        # the run's own plan: the graders and selection it stored, no agent imported
        prepared = prepare_stored(
            config,
            spec.run_dir,
            use_cache=spec.use_cache,
            load_agents=False,
            targets=(spec.target,),
            changed_hint="grade the traces again: the dataset changed while they were graded",
        )
        self.plan = prepared.plans[spec.target]
        directory = prepared.directory
        self.policy: TracePolicy | None = spec.policy
        self.redaction = config.redaction
        self.by_id = {str(q.id): q for q in self.plan.questions}
        self.directory, self.target, self.part = directory, spec.target, spec.part
        self._held = contextlib.ExitStack()  # open until the worker's process ends
        self._opened: tuple[Any, int, Any] | None = None
        self._graded: list[GradedTrace] = []

    def _open(self) -> tuple[Any, int, Any]:
        """(store, grading id, trace part) at the first commit: the parent makes the run's
        grading once the archive is paired, while this worker was starting."""
        if self._opened is None:
            store = self._held.enter_context(self.directory.store(redaction=self.redaction))
            own = store.own_grading_id()
            if own is None:
                raise RuntimeError(f"run {self.directory.path.name} has no grading to commit into")
            part = self.directory.trace_part(self.target, self.part)
            part.parent.mkdir(parents=True, exist_ok=True)
            lines = self._held.enter_context(part.open("a", encoding="utf-8"))
            self._opened = (store, own, lines)
        return self._opened

    @property
    def uncommitted(self) -> int:
        return len(self._graded)

    def size(self, payload: Any) -> int:
        return int(payload[3])

    def root(self, payload: Any) -> str | None:
        return None  # grade-traces sends no verdict back to a span

    async def grade(self, trace_id: str, payload: Any) -> Any:
        qid, trial, ordinal, _spans, data = payload
        trace = pickle.loads(data)
        question = self.by_id.get(qid)
        if question is None:  # only the trace policy pairs a trace with a question of its own
            assert self.policy is not None
            question = self.policy.question(trace)
        self.plan.ordinals[qid] = ordinal
        graded = await grade_paired(self.plan, question, trace, trial, policy=self.redaction)
        self._graded.append(graded)
        return graded.result

    async def grade_conversations(self, *, force: bool = False) -> list[Any]:
        return []  # conversations were made whole before pairing

    def holds(self, trace_id: str) -> bool:
        return False

    def commit(self) -> None:
        graded, self._graded = self._graded, []
        if graded:
            store, grading_id, lines = self._open()
            commit_graded(store, grading_id, lines, graded)

    def take_rollups(self) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
        return {}, {}


def _as_is(payload: Any) -> Any:
    return payload


def _spans(payload: Any) -> int:
    return int(payload[3])


class ArchiveWorkers:
    """grade-traces' grading pool, started when the run is prepared, so the workers build their
    plans while this process pairs the archive; `grade` sends them the pairs, `close` ends
    them however the grading ended."""

    def __init__(
        self,
        *,
        workers: int,
        config_path: Path,
        target: str,
        directory: RunDirectory,
        use_cache: bool,
        policy: TracePolicy | None,
    ) -> None:
        specs = [
            WorkerSpec(
                config_path=str(config_path),
                target=target,
                run_dir=str(directory.path),
                use_cache=use_cache,
                sample=1.0,
                policy=policy,
                conversations=None,
                index=k,
                part=f"w{k}",
                batch=COMMIT_BATCH,
                batch_s=1.0,
                tick_s=0.2,
                build=PairedGrading,
            )
            for k in range(workers)
        ]
        self.workers = workers
        self.lost = 0
        self.room = asyncio.Event()
        self._attached = False
        self._pool: GradingPool | None = None
        self._not_started: BaseException | None = None
        # Starting the first worker waits for the fork server to load what the workers share
        # (1-2 s on a loaded machine, all of it this process's wait before): in a thread, so
        # this process pairs the archive meanwhile.
        self._starting = threading.Thread(
            target=self._start, args=(specs,), name="tracegrade-grading-start", daemon=True
        )
        self._starting.start()

    def _start(self, specs: list[WorkerSpec]) -> None:
        try:
            self._pool = GradingPool(
                specs,
                on_report=lambda *_: None,
                on_failed=self._failed,
                on_room=self.room.set,
                preload=_PRELOAD,
            )
        except BaseException as exc:  # raised where the pool is first needed
            self._not_started = exc

    @property
    def pool(self) -> GradingPool:
        """The pool, once `started` waited for it."""
        assert self._pool is not None, "ArchiveWorkers.started() was not awaited"
        return self._pool

    def _failed(self, _trace_id: str, spans: int) -> None:
        self.lost += spans
        self.room.set()  # a dead worker's window is free: its replacement takes what comes next

    async def started(self) -> None:
        """Every worker has built its plan (one that could not is exit 3)."""
        if not self._attached:
            while self._starting.is_alive():
                await asyncio.sleep(0.02)
            if self._not_started is not None:
                raise self._not_started
            self.pool.attach()
            self._attached = True
        await self.pool.started()

    async def grade(self, pairs: SpilledPairs, plan: Any) -> tuple[int, list[str]]:
        """Grade every pair on the workers; returns (the spans of the traces no worker graded,
        why: each worker that died). The parent's `plan` gives each question its ordinal (a
        trace policy's questions get theirs in trial order, as one process gives them)."""
        await self.started()
        pool, ready = self.pool, deque[tuple[str, Any]]()
        queued = _QUEUED * self.workers

        async def route(*, until_empty: bool) -> None:
            while not pool.take(ready, ready.popleft, encode=_as_is, size=_spans):
                if not until_empty and len(ready) < queued:
                    return
                self.room.clear()  # no await since `take`: a report cannot slip between them
                await self.room.wait()

        for qid, _how, trial, trace_id, spans, data in pairs.numbered():
            ordinal = plan.ordinals.setdefault(qid, len(plan.ordinals))
            ready.append((trace_id, (qid, trial, ordinal, spans, data)))
            if len(ready) >= queued:
                await route(until_empty=False)
        await route(until_empty=True)
        await pool.stop()
        return self.lost, list(pool.failures)

    def close(self) -> None:
        self._starting.join()  # however the grading ended: no worker left running
        if self._pool is not None:
            self._pool.close()
