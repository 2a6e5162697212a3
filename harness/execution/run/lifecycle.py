"""Runs: starting and resuming them (re-grading one is `tracegrade.execution.run.regrade`).

A run lives in a run directory (`tracegrade.rundir.directory.RunDirectory`: its manifest, its
results store, its trace files). A new run is prepared first (`tracegrade.execution.run.prepare`:
every input checked, then the directory created); its questions run where the config says
(`tracegrade.execution.executors.dispatch`); the run's verdict is the one `tracegrade.rundir.verdict`
decides for every command. The CLI subcommands are thin fronts over `start_run`, `resume_run`
and `regrade_run`; each returns a `RunOutcome` the reports render and whose `exit_code` the CLI
returns.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...inputs.config import Config, TargetConfig
from ...records import GradeResult
from ...rundir.directory import RunDirectory
from ...rundir.outcome import RunOutcome, Selection
from ...rundir.store import ResultStore
from ...rundir.verdict import decide_run, record_lost_spans
from ...verdicts.result import QuestionResult
from ..executors.dispatch import arun_plans, connect_executor
from ..executors.heap import frozen_heap
from ..executors.loops import run_without_loop
from ..question.grading import AttachedGrader
from .prepare import prepare_run
from .prepared import ExecutorSettings
from .reopen import narrow_to_missing, prepare_resume

__all__ = ["aresume_run", "astart_run", "decided", "resume_run", "start_run"]

log = logging.getLogger(__name__)


def _as_results(question: QuestionResult) -> list[GradeResult]:
    return [
        GradeResult(
            grader_id=g.grader_id,
            score=g.score,
            reason=g.reason,
            error=g.error,
            min_score=g.min_score,
            max_score=g.max_score,
            details=g.details,  # a rubric judge says here that it decided on the record
        )
        for g in question.graders
    ]


def _advisories(
    mode: str, attached: Sequence[AttachedGrader], questions: Sequence[QuestionResult]
) -> list[str]:
    from ...graders.advisories import advisories

    results = [_as_results(q) for q in questions]
    return [a.message for a in advisories(mode, [a.attachment for a in attached], results)]


def _module_note(target: TargetConfig, attached: Sequence[AttachedGrader]) -> list[str]:
    """Say which graders came from the automatic grading module (graders.py beside the
    dataset): they attach even when the target's `graders:` names none of them."""
    ids = [a.grader.id for a in attached if a.spec.source == "module"]
    if not (target.grading_module_auto and ids):
        return []
    return [
        f"graders from the automatic grading module {target.grading_module} (graders.py "
        f"beside the dataset): {', '.join(ids)}; `grading_module: false` on the target opts out"
    ]


def decided(
    run: RunDirectory,
    store: ResultStore,
    grading_id: int,
    targets: Sequence[TargetConfig],
    attached: Mapping[str, Sequence[AttachedGrader]],
    *,
    digest: Callable[[str], object] | None = None,
) -> RunOutcome:
    """The run's one verdict (`decide_run`) with what the graders say about themselves
    beside each target (advisories: "Text only", graders that skipped everything). With
    `digest`, a streamed verdict (`decide_run`'s): the advisories read its witnesses."""
    # The heap the run built (the agent's libraries, the questions' leftovers) is kept out of
    # the full collections the verdict's own objects would set off, as while questions ran.
    with frozen_heap():
        outcome = decide_run(run, store, grading_id, digest=digest)
    by_name = {t.name: t for t in targets}
    for result in outcome.targets:
        target = by_name.get(result.target)
        graders = list(attached.get(result.target, []))
        if target is not None:
            result.advisories = (
                _module_note(target, graders)
                + result.advisories  # the check plan's, from the run's identity
                + _advisories(
                    target.mode,
                    graders,
                    result.questions if result.digest is None else result.digest.witnesses,
                )
            )
    return outcome


async def astart_run(
    config: Config,
    selection: Selection = Selection(),
    *,
    use_cache: bool = True,
    on_start: Callable[[Path, int], None] | None = None,
    on_done: Callable[[QuestionResult], None] | None = None,
    run_id: str | None = None,
    workers: int | None = None,
    executor: str | None = None,
) -> RunOutcome:
    """Run the selected targets' questions in a new run directory and score them.

    Everything that can be invalid (targets, datasets, graders, rubric refs, agent factories) is
    checked before the run directory is created (`prepare_run`). `on_start(run_dir, total)` is
    called once the run directory exists; `on_done(question)` after each question is committed.
    `workers` (default: the config's `workers:`) runs each target in that many processes
    (`tracegrade.execution.executors.workers`); `executor` (default: the config's `executor:`) `"ray"` runs them
    on Ray actors (`tracegrade.execution.executors.ray_executor`).
    """
    where = ExecutorSettings.of(config).with_options(executor=executor, workers=workers)
    connect_executor(where)  # before any run directory exists
    where.refuse_unsendable(config.select_targets(selection.targets))
    run = prepare_run(config, selection, use_cache=use_cache, run_id=run_id)
    notes = list(run.notes)
    lost: list[int] = []
    with run.directory.store(redaction=run.settings.redaction) as store, run.directory.lock(store):
        grading_id = run.directory.own_grading(store, manifest=run.manifest)
        if on_start is not None:
            on_start(run.run_dir, run.total)
        notes += await arun_plans(
            list(run.plans.values()),
            lost=lost,
            settings=dataclasses.replace(run.settings, executor=where),
            run=run.directory,
            store=store,
            grading_id=grading_id,
            on_done=on_done,
            use_cache=use_cache,
        )
        record_lost_spans(store, grading_id, sum(lost))
        # a `grade` made while the run went on is older than its rows: never its verdict
        grading_id = store.current_grading(grading_id, mode="run")
        outcome = decided(run.directory, store, grading_id, run.targets, run.attached)
    outcome.notes[:0] = notes
    return outcome


async def aresume_run(
    config: Config,
    run: str | Path,
    *,
    use_cache: bool = True,
    on_start: Callable[[Path, int], None] | None = None,
    on_done: Callable[[QuestionResult], None] | None = None,
    workers: int | None = None,
    executor: str | None = None,
) -> RunOutcome:
    """Finish an interrupted run: ask only the questions it has no committed row for, with
    the graders the run stored, then score the whole run (`workers`, `executor`: as for
    `astart_run`)."""
    prepared = prepare_resume(config, run, use_cache=use_cache)
    where = prepared.settings.executor.with_options(executor=executor, workers=workers)
    where.refuse_unsendable(p.target for p in prepared.plans.values())
    connect_executor(where)
    notes = list(prepared.notes)
    lost: list[int] = []
    directory = prepared.directory
    with directory.store(redaction=prepared.settings.redaction) as store, directory.lock(store):
        grading_id = directory.own_grading(store, manifest=prepared.manifest)
        # what is left is read once the run is held: no other process commits to it now
        notes += narrow_to_missing(prepared, store.finished_trials)
        plans = list(prepared.plans.values())
        if on_start is not None:
            on_start(prepared.run_dir, prepared.total)
        notes += await arun_plans(
            [p for p in plans if p.questions],
            lost=lost,
            settings=dataclasses.replace(prepared.settings, executor=where),
            run=directory,
            store=store,
            grading_id=grading_id,
            on_done=on_done,
            use_cache=use_cache,
        )
        record_lost_spans(store, grading_id, sum(lost))
        # the resumed rows went into the run's own grading: a later one (a `grade` of the
        # interrupted run) is older than them, so the verdict is a new grading of them all
        grading_id = store.current_grading(grading_id, mode="resume")
        outcome = decided(directory, store, grading_id, prepared.targets, prepared.attached)
    outcome.notes[:0] = notes
    return outcome


def start_run(config: Config, selection: Selection = Selection(), **options: Any) -> RunOutcome:
    """`astart_run` for callers without an event loop (the CLI)."""
    return run_without_loop("start_run", lambda: astart_run(config, selection, **options))


def resume_run(config: Config, run: str | Path, **options: Any) -> RunOutcome:
    """`aresume_run` for callers without an event loop (the CLI)."""
    return run_without_loop("resume_run", lambda: aresume_run(config, run, **options))
