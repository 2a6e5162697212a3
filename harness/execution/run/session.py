"""A run driven question by question from outside: the pytest plugin's run.

`tracegrade run` asks a whole selection at once (`tracegrade.execution.run.lifecycle`). A test runner asks
one question per test item, in its own order, possibly from several processes (pytest-xdist
workers): `RunSession.create` opens the run directory (every input checked first, identity
written, one grading), each process `join`s it, `arun_question` runs one question through the
same runner and commits it to the shared `results.sqlite` (SQLite in WAL mode serialises the
writers), and `outcome()` scores whatever ran. A worker writes its own trace file per target
(`traces/<target>.<worker>.jsonl`); `outcome()` merges them into `traces/<target>.jsonl`, so
the run directory reads like any other and `tracegrade grade` re-grades it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ...inputs.config import Config
from ...rundir.directory import RunDirectory
from ...rundir.manifest import RunManifest
from ...rundir.outcome import RunOutcome, Selection
from ...rundir.store import ResultStore
from ...rundir.verdict import record_lost_spans, record_scope
from ...verdicts.result import QuestionResult
from ..executors.protocol import committing
from ..question.runner import TargetPlan, arun_target
from .lifecycle import decided
from .prepare import prepare_run
from .prepared import RunSettings
from .reopen import prepare_stored
from .services import open_telemetry, telemetry_notes

if TYPE_CHECKING:
    from ...capture.telemetry import RunTelemetry
    from ...inputs.dataset import Question

__all__ = ["RunSession"]


@dataclass(slots=True)
class _Target:
    plan: TargetPlan
    """The target's plan over every selected question (factories loaded, graders attached)."""
    questions: dict[str, Question]
    """Selected questions by id, in selection order."""
    telemetry: RunTelemetry | None = None


@dataclass(slots=True)
class RunSession:
    """One run directory that questions are added to one at a time."""

    settings: RunSettings
    """What the session reads of the config (its telemetry, redaction)."""
    directory: RunDirectory
    manifest: RunManifest
    """The run's manifest (`identity.json`)."""
    grading_id: int
    worker: str | None = None
    """The process's name among several writing this run (`gw0`...); None for the only one."""
    notes: list[str] = field(default_factory=list)
    _targets: dict[str, _Target] = field(default_factory=dict)
    _store: ResultStore | None = None

    @property
    def run_dir(self) -> Path:
        return self.directory.path

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @classmethod
    def create(
        cls,
        config: Config,
        selection: Selection = Selection(),
        *,
        use_cache: bool = True,
        run_id: str | None = None,
    ) -> RunSession:
        """Check every input of the selected targets, then create the run directory, its
        identity and its grading, as `tracegrade run` does. No question runs yet."""
        run = prepare_run(config, selection, use_cache=use_cache, run_id=run_id, source="pytest")
        store = run.directory.store(redaction=run.settings.redaction)
        grading_id = run.directory.own_grading(store, manifest=run.manifest)
        targets = {
            name: _Target(plan, {str(q.id): q for q in plan.questions})
            for name, plan in run.plans.items()
        }
        return cls(
            run.settings,
            run.directory,
            run.manifest,
            grading_id,
            None,
            list(run.notes),
            targets,
            store,
        )

    @classmethod
    def join(
        cls, config: Config, run_dir: Path | str, *, worker: str, use_cache: bool = True
    ) -> RunSession:
        """Open a run another process created, to add this process's questions to it."""
        run = prepare_stored(config, run_dir, use_cache=use_cache)
        targets = {
            name: _Target(plan, {str(q.id): q for q in plan.questions})
            for name, plan in run.plans.items()
            if plan.questions
        }
        store = run.directory.store(redaction=run.settings.redaction)
        grading_id = run.directory.own_grading(store, manifest=run.manifest)
        return cls(
            run.settings, run.directory, run.manifest, grading_id, worker, [], targets, store
        )

    def questions(self, target: str) -> list[Question]:
        """The selected questions of `target`, in selection order."""
        return list(self._targets[target].questions.values())

    def targets(self) -> list[str]:
        return list(self._targets)

    def _trace_file(self, target: str) -> Path | None:
        if not self.settings.telemetry.trace_file:
            return None
        if self.worker:
            return self.directory.trace_part(target, self.worker)
        return self.directory.trace_file(target)

    def select(self, counts: dict[str, int]) -> None:
        """Record how many questions of each target this session selected (a test runner's
        own filters: pytest's `-k` and `-m` deselect items after the run started), so the
        verdict counts only those as missing when they have no result."""
        if self._store is None:
            raise InputError(f"run {self.run_id} is closed")
        record_scope(
            self._store,
            self.grading_id,
            {name: {"selected": counts.get(name, 0)} for name in self.manifest.targets},
        )

    def _telemetry(self, t: _Target) -> RunTelemetry:
        if t.telemetry is None:
            t.telemetry = open_telemetry(self.settings, self._trace_file(t.plan.target.name))
        return t.telemetry

    async def arun_question(self, target: str, question_id: str) -> list[QuestionResult]:
        """Run one question of the run through its agent and graders (each of the target's
        `repeats` trials), commit it, return its score per trial."""
        if self._store is None:
            raise InputError(f"run {self.run_id} is closed")
        t = self._targets[target]
        plan = replace(
            t.plan,
            questions=[t.questions[question_id]],
            run_id=Path(self.run_dir).name,
            message_chars=self.settings.telemetry.captured_message_chars(),
        )  # ordinals: the selection's
        scores: list[QuestionResult] = []
        await arun_target(
            plan,
            commit=committing(self._store, self.grading_id, scores.append),
            tracer=self._telemetry(t).tracer,
            before_commit=self._telemetry(t).flush_trace_file,
        )
        return sorted(scores, key=lambda s: s.trial)

    def close(self) -> list[str]:
        """Flush this process's traces and close its store; returns export notes."""
        notes: list[str] = []
        for name, t in self._targets.items():
            if t.telemetry is not None:
                report = t.telemetry.shutdown()
                notes += telemetry_notes(self.settings, name, report)
                if self._store is not None:  # records lost on disk: the run is incomplete
                    record_lost_spans(self._store, self.grading_id, report.trace_file_failed)
                t.telemetry = None
        if self._store is not None:
            self._store.close()
            self._store = None
        return notes

    def outcome(self, notes: Sequence[str] = ()) -> RunOutcome:
        """Score what ran, from every process; call once every process has closed. Merges the
        workers' trace files into each target's one trace file."""
        self.close()
        for name in self._targets:
            self.directory.fold_traces(name)
        targets = [t.plan.target for t in self._targets.values()]
        attached = {name: t.plan.attached for name, t in self._targets.items()}
        with self.directory.store(redaction=self.settings.redaction) as store:
            outcome = decided(self.directory, store, self.grading_id, targets, attached)
        outcome.notes[:0] = [*self.notes, *notes]
        return outcome
