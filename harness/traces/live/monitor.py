"""A monitor run: agent traces arriving live (`tracegrade receive`), each graded as it completes
into one run directory that grows.

The run is a normal run directory (store, trace file, manifest), so `show`, `compare`, `label`,
`promote` and the HTML report work on it while it grows and after. Each trace is paired with a
question of the target's dataset as `grade-traces` pairs it, and graded by the same
`grade_paired`; a question answered by several traces gets trials 0, 1, ... in grading order.
Graded traces are committed together (`commit`: one transaction for what the receiver graded
since the last), their rows being what a restart reads back as graded.

What the receiver saw is rolled up per hour (UTC) in the store (`MONITOR_META`): traces graded,
passed, failed, errored, unmatched, not agent traces; spans received, sampled out, late; traces
dropped by the bounds. `show` prints them and the JSON report carries them (`monitor`).

A stop persists the traces still waiting for their root span to `pending.jsonl` in the run
directory; a restart on the same run (`--run`) reads them back, skips every trace it already
graded and numbers trials on from the last.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ...errors import InputError, NothingToRunError
from ...inputs.config import Config, load_config
from ...rundir.directory import RunDirectory
from ...rundir.manifest import RunSource
from ...rundir.monitoring import MONITOR_META, monitor_notes
from ...rundir.outcome import RunOutcome, Selection
from ...rundir.store import ResultStore
from ...rundir.verdict import record_lost_spans, record_scope
from ...verdicts.result import QuestionResult
from ...verdicts.scoring import question_passed
from ..archive import Pair, Pairer
from ..conversations import ConversationBook
from ..dialects import AgentTrace, agent_trace
from ..grade import GradedTrace, commit_graded, grade_paired
from ..policy import TracePolicy, with_policy
from ..spans import ReadProblems, Span, read_spans, request_of_spans

__all__ = ["Monitor", "MonitorGrading", "monitor_grading"]

PENDING_FILE = "pending.jsonl"
SOURCE_KIND = "receive"
_LISTED = 20
"""Trace ids listed per kind of problem (unmatched, ambiguous, dropped); all are counted."""


def _hour(now: float | None = None) -> str:
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return moment.strftime("%Y-%m-%dT%H:00Z")


class Monitor:
    """One monitor run of one target. Built (inputs checked, run directory made or found) in
    any thread; `start`, `grade`, `checkpoint` and `close` run in the thread that serves."""

    def __init__(
        self,
        config: Config,
        target: str,
        *,
        run: str | Path | None = None,
        use_cache: bool = True,
        sample: float = 1.0,
        policy: TracePolicy | None = None,
        conversations: ConversationBook | None = None,
    ) -> None:
        self.policy = policy
        self.conversations = conversations
        """With a book, the traces of one conversation are graded together once it is quiet."""
        if policy:  # its graders attached to the target for this run (the manifest says so)
            config = with_policy(config, target, policy)
        self.config = config
        self.target = target
        self.sample = sample
        self.rollups: dict[str, Counter[str]] = {}
        self.listed: dict[str, list[str]] = {"unmatched": [], "ambiguous": [], "dropped": []}
        self.trials: dict[str, int] = {}
        self.graded_ids: list[str] = []
        """The traces graded before this start (a restarted monitor's), read from the store."""
        self.resumed = run is not None
        self.use_cache = use_cache
        self.worker = False
        """One of a receiver's grading workers (`start_worker`)."""
        self._store: ResultStore | None = None
        self._held = contextlib.ExitStack()
        self._lines: TextIO | None = None
        self._runs = 0
        self._recorded = -1
        self._seen: Counter[str] = Counter()
        self._graded: list[tuple[GradedTrace, bool]] = []
        """Graded and not committed yet (`commit`), each with whether the policy paired it."""
        if run is None:
            self._create(use_cache)
        else:
            self._reopen(run, use_cache)

    # -- making and finding the run ---------------------------------------------------------
    def _create(self, use_cache: bool) -> None:
        from ...execution.run.prepare import prepare_run

        prepared = prepare_run(
            self.config,
            Selection(targets=(self.target,)),
            use_cache=use_cache,
            load_agents=False,
            source="traces",
        )
        self.run_id, self.directory = prepared.run_id, prepared.directory
        self.manifest = prepared.manifest
        self.manifest.source = RunSource(kind=SOURCE_KIND, target=self.target)
        self.directory.write_manifest(self.manifest)
        self.plan = prepared.plans[self.target]
        self.targets = prepared.targets
        self.attached = prepared.attached
        self._grading_id: int | None = None

    def _reopen(self, run: str | Path, use_cache: bool) -> None:
        from ...execution.run.reopen import prepare_stored

        manifest = RunDirectory.open(run, runs_dir=self.config.runs_dir).manifest()
        source = manifest.source
        if source is None or source.kind != SOURCE_KIND or self.target not in manifest.targets:
            raise InputError(
                f"run {manifest.run_id} is not a monitor run of target {self.target!r}",
                key="--run",
                hint="name a run that `tracegrade receive --target "
                f"{self.target}` started, or leave --run out to start one",
            )
        prepared = prepare_stored(
            self.config,
            run,
            use_cache=use_cache,
            load_agents=False,
            targets=(self.target,),
            changed_hint="start a new monitor run (leave --run out)",
        )
        self.run_id, self.directory = prepared.run_id, prepared.directory
        self.manifest = prepared.manifest
        self.plan = prepared.plans[self.target]
        self.targets, self.attached = prepared.targets, prepared.attached
        self._grading_id = None

    @property
    def run_dir(self) -> Path:
        return self.directory.path

    # -- serving ----------------------------------------------------------------------------
    def start(self) -> list[list[Span]]:
        """Open the store and hold the run; returns the traces a previous stop left pending
        (their spans, to be assembled again)."""
        self._held = contextlib.ExitStack()
        store = self._held.enter_context(self.directory.store(redaction=self.config.redaction))
        try:
            self._held.enter_context(self.directory.lock(store))
        except BaseException:
            self._held.close()
            raise
        self._store = store
        self._grading_id = self.directory.own_grading(store, manifest=self.manifest)
        self.plan.run_id = self.run_id
        self.pairer = Pairer(self.plan.questions)
        for run in store.load_runs(self.target):
            self.trials[run.id] = max(self.trials.get(run.id, 0), run.trial + 1)
            if run.trace_id:
                self.graded_ids.append(run.trace_id)
        saved = store.meta(MONITOR_META) or {}
        for hour, counts in (saved.get("hours") or {}).items():
            self.rollups[hour] = Counter({k: v for k, v in counts.items()})
        for kind, ids in (saved.get("listed") or {}).items():
            self.listed[kind] = list(ids)[:_LISTED]
        self._runs = len(self.graded_ids)
        record_scope(store, self._grading_id, {self.target: {"runs": self._runs}})
        self.directory.fold_traces(self.target)  # grading workers' files a kill left
        trace_file = self.directory.trace_file(self.target)
        trace_file.parent.mkdir(parents=True, exist_ok=True)
        self._lines = self._held.enter_context(trace_file.open("a", encoding="utf-8"))
        return self._read_pending()

    def start_worker(self, part: str) -> None:
        """Open the run as one of its grading workers (`receive --workers`): the store without
        the run's lock (the receiver holds it), the run's grading, and this worker's own trace
        file `part`. Trials are numbered by the store when a batch commits (`commit`)."""
        self._held = contextlib.ExitStack()
        self._store = self._held.enter_context(
            self.directory.store(redaction=self.config.redaction)
        )
        own = self._store.own_grading_id()
        if own is None:
            raise RuntimeError(f"monitor run {self.run_id} has no grading to commit into")
        self._grading_id = own
        self.plan.run_id = self.run_id
        self.pairer = Pairer(self.plan.questions)
        self.worker = True
        trace_file = self.directory.trace_part(self.target, part)
        trace_file.parent.mkdir(parents=True, exist_ok=True)
        self._lines = self._held.enter_context(trace_file.open("a", encoding="utf-8"))

    def take_rollups(self) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
        """A worker's rollups and listed ids since the last call (for the receiver's run)."""
        rollups = {hour: dict(counts) for hour, counts in self.rollups.items()}
        listed = {kind: list(ids) for kind, ids in self.listed.items() if ids}
        self.rollups.clear()
        self.listed = {kind: [] for kind in self.listed}
        return rollups, listed

    def absorb(
        self, rollups: Mapping[str, Mapping[str, int]], listed: Mapping[str, list[str]], runs: int
    ) -> None:
        """What a grading worker graded and committed: its rollups, listed ids and runs."""
        for hour, counts in rollups.items():
            self.rollups.setdefault(hour, Counter()).update(counts)
        for kind, ids in listed.items():
            for tid in ids:
                self._list(kind, tid)
        self._runs += runs

    def _read_pending(self) -> list[list[Span]]:
        path = self.run_dir / PENDING_FILE
        if not path.is_file():
            return []
        by_trace: dict[str, list[Span]] = {}
        for span in read_spans(path, ReadProblems()):
            by_trace.setdefault(span.trace_id, []).append(span)
        return list(by_trace.values())

    def _count(self, **counts: int) -> None:
        counts = {k: v for k, v in counts.items() if v}
        if counts:
            self.rollups.setdefault(_hour(), Counter()).update(counts)

    def _list(self, kind: str, trace_id: str) -> None:
        if len(self.listed[kind]) < _LISTED:
            self.listed[kind].append(trace_id)

    async def grade(self, trace_id: str, spans: list[Span]) -> QuestionResult | None:
        """Grade one complete trace (paired with its question), stored at the next `commit`;
        None when it is not an agent trace or pairs with no question (counted, and listed up
        to a point)."""
        assert self._store is not None and self._lines is not None, "start() first"
        trace = agent_trace(spans)
        if trace is None:
            self._count(not_agent=1)
            return None
        if self.conversations is not None:
            ready = self.conversations.add(trace)
            if not ready:  # held until its conversation is quiet (`grade_conversations`)
                return None
            trace = ready[0]
        return await self.grade_trace(trace)

    def holds(self, trace_id: str) -> bool:
        """Whether a trace is held for its conversation (graded when the conversation is)."""
        return self.conversations is not None and self.conversations.holds(trace_id)

    def members(self, trace_id: str) -> tuple[str, ...]:
        """The trace ids of the conversation graded as `trace_id` (itself alone when none)."""
        if self.conversations is None:
            return (trace_id,)
        return self.conversations.take_members(trace_id)

    async def grade_conversations(self, *, force: bool = False) -> list[QuestionResult]:
        """Grade the conversations quiet long enough (every open one when `force`: a stop)."""
        if self.conversations is None:
            return []
        scores = []
        for trace in self.conversations.close(force=force):
            score = await self.grade_trace(trace)
            if score is not None:
                scores.append(score)
        return scores

    async def grade_trace(self, trace: AgentTrace) -> QuestionResult | None:
        """Grade one agent trace (or conversation) paired with its question."""
        trace_id = trace.trace_id
        pair = self.pairer.pair(trace)
        if isinstance(pair, list):
            self._count(ambiguous=1)
            self._list("ambiguous", trace_id)
            return None
        if pair is None and self.policy:
            pair = Pair(self.policy.question(trace), trace, "trace policy")
            self.plan.ordinals.setdefault(str(pair.question.id), len(self.plan.ordinals))
        if pair is None:
            self._count(unmatched=1)
            self._list("unmatched", trace_id)
            return None
        qid = str(pair.question.id)
        trial = 0 if self.worker else self.trials.get(qid, 0)  # a worker's: at its commit
        self.trials[qid] = trial + 1
        self._runs += 1
        graded = await grade_paired(
            self.plan, pair.question, trace, trial, policy=self.config.redaction
        )
        self._graded.append((graded, pair.how == "trace policy"))
        return graded.result

    @property
    def uncommitted(self) -> int:
        """Traces graded and not committed yet."""
        return len(self._graded)

    def commit(self) -> None:
        """Commit the traces graded since the last commit, in one transaction: their rows are
        what a restart reads back as graded, so a kill before it leaves them ungraded (and
        uncounted), never half recorded. Counted in the rollups once committed; on a failure
        nothing of them is stored, and it is raised."""
        assert self._store is not None and self._lines is not None, "start() first"
        graded, self._graded = self._graded, []
        numbered = (self.run_id, self.config.redaction) if self.worker else None
        commit_graded(
            self._store,
            self._grading_id or 0,
            self._lines,
            [g for g, _ in graded],
            numbered=numbered,
        )
        for trace, by_policy in graded:
            score = trace.result
            passed = question_passed(score)
            self._count(
                graded=1,
                policy=int(by_policy),
                passed=int(passed is True),
                failed=int(passed is False and not score.errored),
                errored=int(score.errored),
                degraded=int(score.degraded),
            )

    def receiver_counts(self, counts: Mapping[str, int]) -> None:
        """The receiver's running counts (spans received, dropped...): what changed since the
        last call is added to this hour."""
        delta = {k: int(v) - self._seen.get(k, 0) for k, v in counts.items()}
        self._seen.update({k: d for k, d in delta.items() if d})
        self._count(**{k: d for k, d in delta.items() if d > 0})

    def note_dropped(self, trace_ids: Iterable[str]) -> None:
        for tid in trace_ids:
            if tid not in self.listed["dropped"]:
                self._list("dropped", tid)

    def checkpoint(self) -> None:
        """Store the rollups, and the question runs graded so far: the verdict expects that
        many (a question traced twice is two runs; one traced never is none)."""
        if self._store is None:
            return
        if self._runs != self._recorded:
            record_scope(self._store, self._grading_id or 0, {self.target: {"runs": self._runs}})
            self._recorded = self._runs
        self._store.set_meta(MONITOR_META, self.checkpoint_data())

    def persist_pending(self, traces: list[list[Span]]) -> int:
        """Write the traces still waiting for their root to `pending.jsonl` (replacing it);
        returns how many spans were written."""
        path = self.run_dir / PENDING_FILE
        tmp = path.with_name(PENDING_FILE + ".tmp")
        spans = 0
        with tmp.open("w", encoding="utf-8") as out:
            for trace in traces:
                out.write(json.dumps(request_of_spans(trace), ensure_ascii=False) + "\n")
                spans += len(trace)
            out.flush()
            os.fsync(out.fileno())
        if spans:
            os.replace(tmp, path)
        else:
            tmp.unlink()
            path.unlink(missing_ok=True)
        return spans

    def close(self, *, lost_spans: int = 0) -> RunOutcome:
        """Store the rollups and the spans lost (dropped agent traces: the run is incomplete),
        release the run, and decide its one verdict."""
        from ...execution.run.lifecycle import decided
        from ...execution.run.services import redaction_notes

        if self._store is None:
            raise NothingToRunError("the monitor never started")
        store = self._store
        with self._held:
            self.commit()
            self.checkpoint()
            record_lost_spans(store, self._grading_id or 0, lost_spans)
            outcome = decided(
                self.directory, store, self._grading_id or 0, self.targets, self.attached
            )
        self._store = None
        policy = [self.policy.note()] if self.policy else []
        outcome.notes[:0] = (
            redaction_notes(self.config.redaction) + policy + monitor_notes(self.checkpoint_data())
        )
        outcome.monitor = self.checkpoint_data()
        return outcome

    def checkpoint_data(self) -> dict[str, Any]:
        return {
            "hours": {h: dict(c) for h, c in sorted(self.rollups.items())},
            "listed": self.listed,
            "sample": self.sample,
        }


# -- a grading worker's side (`receive --workers N`) ----------------------------------------
class MonitorGrading:
    """`receive --workers N`: a grading worker's items (a trace's spans as rows) graded by its
    share of the monitor run (a `grading_workers.WorkerGrading`)."""

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor

    @property
    def uncommitted(self) -> int:
        return int(self.monitor.uncommitted)

    def size(self, payload: Any) -> int:
        return len(payload)

    def root(self, payload: Any) -> str | None:
        return next((row[1] for row in payload if not row[2]), None)

    async def grade(self, trace_id: str, payload: Any) -> Any:
        return await self.monitor.grade(trace_id, [Span(*row) for row in payload])

    async def grade_conversations(self, *, force: bool = False) -> list[Any]:
        return list(await self.monitor.grade_conversations(force=force))

    def holds(self, trace_id: str) -> bool:
        return bool(self.monitor.holds(trace_id))

    def commit(self) -> None:
        self.monitor.commit()

    def take_rollups(self) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
        rollups, listed = self.monitor.take_rollups()
        return rollups, listed


def monitor_grading(spec: Any) -> MonitorGrading:
    """A grading worker's side of `receive --workers N`, from its `grading_workers.WorkerSpec`:
    the monitor run reopened, this worker's trace part started."""
    book = None
    if spec.conversations is not None:
        quiet_s, max_open, max_turns = spec.conversations
        book = ConversationBook(quiet_s=quiet_s, max_open=max_open, max_turns=max_turns)
    monitor = Monitor(
        load_config(spec.config_path),
        spec.target,
        run=spec.run_dir,
        use_cache=spec.use_cache,
        sample=spec.sample,
        policy=spec.policy,
        conversations=book,
    )
    monitor.start_worker(spec.part)
    return MonitorGrading(monitor)
