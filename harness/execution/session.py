"""A run driven question by question from outside: the pytest plugin's run.

`tracegrade run` asks a whole selection at once (`tracegrade.execution.lifecycle`). A test runner asks
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
from typing import Any

from ..errors import InputError
from ..inputs.config import Config
from ..rundir.outcome import RunOutcome, Selection, trace_file_of
from ..rundir.store import ResultStore
from ..verdicts.scoring import QuestionScore
from .lifecycle import _plan as plan_of
from .lifecycle import _select as select
from .lifecycle import (
    new_grading,
    open_run,
    open_telemetry,
    prepare_run,
    run_services,
    stored_attachments,
    stored_results,
    telemetry_notes,
)
from .runner import TargetPlan, arun_target

__all__ = ["RunSession"]


@dataclass(slots=True)
class _Target:
    plan: TargetPlan
    """The target's plan over every selected question (factories loaded, graders attached)."""
    questions: dict[str, Any]
    """Selected questions by id, in selection order."""
    telemetry: Any = None


@dataclass(slots=True)
class RunSession:
    """One run directory that questions are added to one at a time."""

    config: Config
    run_dir: Path
    identity: dict[str, Any]
    grading_id: int
    worker: str | None = None
    """The process's name among several writing this run (`gw0`...); None for the only one."""
    notes: list[str] = field(default_factory=list)
    _targets: dict[str, _Target] = field(default_factory=dict)
    _store: ResultStore | None = None

    @property
    def run_id(self) -> str:
        return str(self.identity["run_id"])

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
        run = prepare_run(config, selection, use_cache=use_cache, run_id=run_id)
        store = ResultStore.in_run_dir(run.run_dir, redaction=config.redaction)
        grading_id = new_grading(store, run)
        targets = {
            name: _Target(plan, {str(q.id): q for q in plan.questions})
            for name, plan in run.plans.items()
        }
        return cls(
            config, run.run_dir, run.identity, grading_id, None, list(run.notes), targets, store
        )

    @classmethod
    def join(
        cls, config: Config, run_dir: Path | str, *, worker: str, use_cache: bool = True
    ) -> RunSession:
        """Open a run another process created, to add this process's questions to it."""
        run_dir, identity = open_run(config, run_dir)
        selection = Selection.from_dict(identity.get("selection") or {})
        services = run_services(config, run_dir, use_cache)
        attached = stored_attachments(identity, run_dir, services)
        targets = {}
        for name in identity["targets"]:
            target = config.select_targets([name])[0]
            dataset, questions = select(target, selection)
            if questions:
                plan = plan_of(target, questions, dataset, attached[name], services)
                targets[name] = _Target(plan, {str(q.id): q for q in questions})
        store = ResultStore.in_run_dir(run_dir, redaction=config.redaction)
        grading_id = min(g["grading_id"] for g in store.gradings())
        return cls(config, run_dir, identity, grading_id, worker, [], targets, store)

    def questions(self, target: str) -> list[Any]:
        """The selected questions of `target`, in selection order."""
        return list(self._targets[target].questions.values())

    def targets(self) -> list[str]:
        return list(self._targets)

    def _trace_file(self, target: str) -> Path | None:
        if not self.config.telemetry.trace_file:
            return None
        path = trace_file_of(self.run_dir, target)
        return path.with_suffix(f".{self.worker}.jsonl") if self.worker else path

    def _telemetry(self, t: _Target) -> Any:
        if t.telemetry is None:
            t.telemetry = open_telemetry(self.config, self._trace_file(t.plan.target.name))
        return t.telemetry

    async def arun_question(self, target: str, question_id: str) -> list[QuestionScore]:
        """Run one question of the run through its agent and graders (each of the target's
        `repeats` trials), commit it, return its score per trial."""
        if self._store is None:
            raise InputError(f"run {self.run_id} is closed")
        t = self._targets[target]
        plan = replace(
            t.plan,
            questions=[t.questions[question_id]],
            run_id=Path(self.run_dir).name,
            message_chars=self.config.telemetry.captured_message_chars(),
        )  # ordinals: the selection's
        scores: list[QuestionScore] = []
        await arun_target(
            plan,
            store=self._store,
            grading_id=self.grading_id,
            tracer=self._telemetry(t).tracer,
            before_commit=self._telemetry(t).flush_trace_file,
            on_done=scores.append,
        )
        return sorted(scores, key=lambda s: s.trial)

    def close(self) -> list[str]:
        """Flush this process's traces and close its store; returns export notes."""
        notes: list[str] = []
        for name, t in self._targets.items():
            if t.telemetry is not None:
                report = t.telemetry.shutdown()
                notes += telemetry_notes(self.config, name, t.telemetry, report)
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
            _merge_trace_files(trace_file_of(self.run_dir, name))
        targets = [t.plan.target for t in self._targets.values()]
        attached = {name: t.plan.attached for name, t in self._targets.items()}
        with ResultStore.in_run_dir(self.run_dir, redaction=self.config.redaction) as store:
            results = stored_results(store, self.grading_id, targets, self.identity, attached)
        return RunOutcome(
            self.run_id,
            self.run_dir,
            results,
            self.identity,
            self.grading_id,
            [*self.notes, *notes],
        )


def _merge_trace_files(path: Path) -> None:
    parts = sorted(path.parent.glob(f"{path.stem}.*.jsonl")) if path.parent.is_dir() else []
    if not parts:
        return
    with path.open("a", encoding="utf-8") as merged:
        for part in parts:
            merged.write(part.read_text(encoding="utf-8"))
            part.unlink()
