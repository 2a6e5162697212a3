"""A run driven question by question from outside: the pytest plugin's run.

`tracegrade run` asks a whole selection at once (`harness.runs.lifecycle`). A test runner asks
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.inputs.config import Config, TargetConfig
from harness.runs.grading import AttachedGrader, attach_graders
from harness.runs.identity import copy_grading_module, git_commit, package_versions, write_identity
from harness.runs.lifecycle import (
    RunOutcome,
    Selection,
    new_run_id,
    open_run,
    run_services,
    stored_attachments,
    stored_results,
    trace_file_of,
)
from harness.runs.lifecycle import _check_rubrics as check_rubrics
from harness.runs.lifecycle import _grader_specs as grader_specs
from harness.runs.lifecycle import _judge_identity as judge_identity
from harness.runs.lifecycle import _plan as make_plan
from harness.runs.lifecycle import _select as select
from harness.runs.lifecycle import _target_identity as target_identity
from harness.runs.runner import arun_target
from harness.runs.scoring import QuestionScore
from harness.runs.store import ResultStore

__all__ = ["RunSession"]


@dataclass(slots=True)
class _Target:
    config: TargetConfig
    dataset: Any
    questions: dict[str, Any]
    """Selected questions by id, in selection order."""
    attached: list[AttachedGrader]
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
    _services: Any = None
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
        identity and its grading. No question runs yet."""
        run_id = run_id or new_run_id()
        run_dir = config.runs_dir / run_id
        services = run_services(config, run_dir, use_cache)
        targets: dict[str, _Target] = {}
        for target in config.select_targets(selection.targets):
            dataset, questions = select(target, selection)
            attached = attach_graders(
                target.graders, grading_module=target.grading_module, services=services
            )
            check_rubrics(questions, services)
            targets[target.name] = _Target(
                target, dataset, {str(q.id): q for q in questions}, attached
            )
        run_dir.mkdir(parents=True, exist_ok=False)
        identity: dict[str, Any] = {
            "run_id": run_id,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "config_path": str(config.path.resolve()),
            "selection": selection.as_dict(),
            "judge": judge_identity(services),
            "packages": package_versions(),
            "git_commit": git_commit(config.base_dir),
            "targets": {},
        }
        for name, t in targets.items():
            module = t.config.grading_module
            copy = copy_grading_module(module, run_dir, name) if module else None
            identity["targets"][name] = target_identity(t.config, t.dataset, t.attached, copy)
        write_identity(run_dir, identity)
        store = ResultStore.in_run_dir(run_dir)
        store.set_meta("run_id", run_id)
        grading_id = store.new_grading(mode="run", graders=grader_specs(identity))
        return cls(config, run_dir, identity, grading_id, None, services, targets, store)

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
            targets[name] = _Target(
                target, dataset, {str(q.id): q for q in questions}, attached[name]
            )
        store = ResultStore.in_run_dir(run_dir)
        grading_id = min(g["grading_id"] for g in store.gradings())
        return cls(config, run_dir, identity, grading_id, worker, services, targets, store)

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

    def _tracer(self, t: _Target) -> Any:
        if t.telemetry is None:
            from harness.capture.telemetry import RunTelemetry

            t.telemetry = RunTelemetry(
                trace_file=self._trace_file(t.config.name),
                otlp_endpoint=self.config.telemetry.otlp_endpoint,
                otlp_headers=self.config.telemetry.otlp_headers,
            )
        return t.telemetry.tracer

    async def arun_question(self, target: str, question_id: str) -> QuestionScore:
        """Run one question of the run through its agent and graders, commit it, return its
        score."""
        if self._store is None:
            raise InputError(f"run {self.run_id} is closed")
        t = self._targets[target]
        question = t.questions[question_id]
        ordinals = {qid: i for i, qid in enumerate(t.questions)}
        plan = make_plan(t.config, [question], t.dataset, t.attached, self._services)
        plan.ordinals = ordinals
        scores: list[QuestionScore] = []
        await arun_target(
            plan,
            store=self._store,
            grading_id=self.grading_id,
            tracer=self._tracer(t),
            on_done=scores.append,
        )
        return scores[0]

    def close(self) -> list[str]:
        """Flush this process's traces and close its store; returns export notes."""
        notes = []
        for name, t in self._targets.items():
            if t.telemetry is not None:
                report = t.telemetry.shutdown()
                t.telemetry = None
                if report.failed:
                    notes.append(
                        f"{name}: {report.failed} span(s) not exported to {report.endpoint}: "
                        f"{report.first_failure}"
                    )
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
        targets = [t.config for t in self._targets.values()]
        attached = {name: t.attached for name, t in self._targets.items()}
        with ResultStore.in_run_dir(self.run_dir) as store:
            results = stored_results(store, self.grading_id, targets, self.identity, attached)
        return RunOutcome(
            self.run_id, self.run_dir, results, self.identity, self.grading_id, list(notes)
        )


def _merge_trace_files(path: Path) -> None:
    parts = sorted(path.parent.glob(f"{path.stem}.*.jsonl")) if path.parent.is_dir() else []
    if not parts:
        return
    with path.open("a", encoding="utf-8") as merged:
        for part in parts:
            merged.write(part.read_text(encoding="utf-8"))
            part.unlink()
