"""Runs: starting and resuming them, and the run directory they live in (re-grading one is
`tracegrade.execution.regrade`).

```
runs/<run id>/
  identity.json            what produced the scores (tracegrade.rundir.identity)
  results.sqlite           one committed row per finished question (tracegrade.rundir.store)
  traces/<target>.jsonl    the run's local trace file per target (records for re-grading)
  graders/<target>/...     copies of the user grading modules the run used
```

The CLI subcommands are thin fronts over `start_run`, `resume_run` and `regrade_run`; each
returns a `RunOutcome` the reports render and whose `exit_code` the CLI returns.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, NothingToRunError, RubricError
from ..inputs.config import Config, TargetConfig
from ..inputs.sourcefile import raise_problems
from ..records import GradeResult
from ..rundir.identity import (
    copy_grading_module,
    git_commit,
    package_versions,
    read_identity,
    sha256_file,
    write_identity,
)
from ..rundir.outcome import (
    RunOutcome,
    Selection,
    TargetResult,
    new_run_id,
    trace_file_of,
)
from ..rundir.runlock import holder_text, run_lock
from ..rundir.store import ResultStore
from ..verdicts.scoring import (
    QuestionScore,
    evaluate_gate,
    summarise_graders,
)
from .changed import HINT, refuse_changed_rubrics, rubric_files
from .grading import AttachedGrader, attach_from_specs, attach_graders, build_services
from .loops import run_without_loop
from .preflight import (
    check_goals,
    check_graders,
    check_rubric_refs,
    check_run_graph,
    check_simulated_users,
    check_state_environment,
    effective_graders,
)
from .runner import TargetPlan, arun_target, build_shared
from .shards import shard_questions

__all__ = [
    "ANSWERS_VERBATIM_NOTE",
    "PreparedRun",
    "aresume_run",
    "astart_run",
    "new_grading",
    "open_run",
    "open_telemetry",
    "prepare_run",
    "redaction_notes",
    "resume_run",
    "run_services",
    "start_run",
    "stored_attachments",
    "stored_results",
    "telemetry_notes",
]

log = logging.getLogger(__name__)


def _as_results(question: QuestionScore) -> list[GradeResult]:
    return [
        GradeResult(
            grader_id=g.grader_id,
            score=g.score,
            reason=g.reason,
            error=g.error,
            min_score=g.min_score,
            max_score=g.max_score,
        )
        for g in question.graders
    ]


def _advisories(
    mode: str, attached: Sequence[AttachedGrader], questions: Sequence[QuestionScore]
) -> list[str]:
    from ..graders.advisories import advisories

    results = [_as_results(q) for q in questions]
    return [a.message for a in advisories(mode, [a.attachment for a in attached], results)]


def _select_share(
    target: TargetConfig, selection: Selection
) -> tuple[Any, list[Any], dict[str, int]]:
    """(dataset, the questions of this run's shard, ordinals in the whole selection): a
    shard's questions keep the positions they have in the unsharded run."""
    dataset, questions = _select(target, selection)
    ordinals = {str(q.id): i for i, q in enumerate(questions)}
    return dataset, shard_questions(target.name, questions, selection.shard), ordinals


def selected_ids(config: Config, selection: Selection) -> set[str]:
    """The ids of the questions `selection` asks of the config's targets (datasets read, no
    agent built): what `run --baseline` checks the baseline against before anything runs."""
    targets = config.select_targets(selection.targets)
    return {str(q.id) for t in targets for q in _select_share(t, selection)[1]}


def _module_note(target: TargetConfig, attached: Sequence[AttachedGrader]) -> list[str]:
    """Say which graders came from the automatic grading module (graders.py beside the
    dataset): they attach even when the target's `graders:` names none of them."""
    ids = [a.grader.id for a in attached if a.spec.get("source") == "module"]
    if not (target.grading_module_auto and ids):
        return []
    return [
        f"graders from the automatic grading module {target.grading_module} (graders.py "
        f"beside the dataset): {', '.join(ids)}; `grading_module: false` on the target opts out"
    ]


def _select(target: TargetConfig, selection: Selection) -> tuple[Any, list[Any]]:
    from ..inputs.dataset import load_dataset, select_questions

    dataset = load_dataset(target.dataset)
    questions = select_questions(
        dataset,
        split=selection.split,
        bundles=selection.bundles,
        tags=selection.tags,
        ids=selection.ids,
        limit=selection.limit,
    )
    return dataset, questions


def _target_identity(
    target: TargetConfig, dataset: Any, attached: Sequence[AttachedGrader], module_copy: str | None
) -> dict[str, Any]:
    specs = []
    for a in attached:
        spec = dict(a.spec)
        if spec["source"] == "module":
            spec["module"] = module_copy
        specs.append(spec)
    return {
        "mode": target.mode,
        "repeats": target.repeats,
        "config": target.raw,
        "dataset": {"path": str(target.dataset), "sha256": dataset.sha256, "name": dataset.name},
        "grading_module": {
            "path": str(target.grading_module),
            "sha256": sha256_file(target.grading_module),
            "copy": module_copy,
        }
        if target.grading_module
        else None,
        "graders": specs,
    }


ANSWERS_VERBATIM_NOTE = (
    "redaction.answers is false: the agent's answers are stored and reported verbatim, "
    "secrets and all (every other copy is still redacted)"
)


def redaction_notes(config: Config) -> list[str]:
    """What the console says on every run about the redaction policy."""
    return [] if config.redaction.answers else [ANSWERS_VERBATIM_NOTE]


def run_services(config: Config, run_dir: Path, use_cache: bool) -> Any:
    return build_services(
        judge=config.judge,
        judge_panels=config.judge_panels,
        redaction=config.redaction,
        base_dir=config.base_dir,
        runs_dir=config.runs_dir,
        rubrics=config.rubrics,
        use_cache=use_cache,
        workdir=run_dir,
    )


def _judge_identity(services: Any) -> dict[str, Any] | None:
    provider = services.judge_provider
    if provider is None:
        return None
    return {**provider.identity(), "pinned_knobs": provider.pinned_knobs()}


def open_telemetry(config: Config, trace_file: Path | None) -> Any:
    """The `RunTelemetry` one target's questions are recorded with, as the config says."""
    from ..capture.telemetry import RunTelemetry

    return RunTelemetry(
        trace_file=trace_file,
        otlp_endpoint=config.telemetry.otlp_endpoint,
        otlp_headers=config.telemetry.otlp_headers,
        redaction=config.redaction,
        project=config.telemetry.project,
        protocol=config.telemetry.protocol,
    )


def telemetry_notes(config: Config, target: str, telemetry: Any, report: Any) -> list[str]:
    """What a shut-down telemetry's export report tells the operator."""
    notes = []
    if report.trace_file_failed:
        notes.append(
            config.redaction.text(
                f"{target}: {report.trace_file_failed} span(s) could not be written "
                f"to the trace file {report.trace_file} ({report.trace_file_failure}); "
                "the run is incomplete (exit 3)"
            )
        )
    if report.failed:
        notes.append(
            config.redaction.text(
                f"{target}: {report.failed} span(s) not exported to "
                f"{report.endpoint}: {report.first_failure}"
            )
        )
    if report.exported:
        notes.append(
            f"{target}: {report.exported} span(s) exported to {report.endpoint} "
            f"({telemetry.protocol}, project {config.telemetry.project})"
        )
    return notes


async def _arun_plans(
    plans: Sequence[TargetPlan],
    *,
    config: Config,
    run_dir: Path,
    store: ResultStore,
    grading_id: int,
    on_done: Callable[[QuestionScore], None] | None,
    lost: list[int],
    workers: int = 1,
    use_cache: bool = True,
    executor: str = "local",
) -> list[str]:
    from .workers import arun_target_in_workers, combined_report, fold_worker_traces

    notes = []
    for plan in plans:
        plan.run_id = run_dir.name  # each question run's conversation id names its run
        plan.message_chars = config.telemetry.captured_message_chars()
        trace_file = (
            trace_file_of(run_dir, plan.target.name) if config.telemetry.trace_file else None
        )
        # the worker trace files of a run killed before it folded them: their records first
        fold_worker_traces(run_dir, plan.target.name)
        if executor == "ray" or (
            workers > 1 and plan.work_count() > 1 and plan.target.concurrency > 1
        ):
            if executor == "ray":
                from .ray_executor import arun_target_on_ray

                run_elsewhere: Any = functools.partial(
                    arun_target_on_ray, address=config.ray_address
                )
            else:
                run_elsewhere = arun_target_in_workers
            _, reports = await run_elsewhere(
                plan,
                workers=workers,
                config_path=config.path,
                run_dir=run_dir,
                store=store,
                grading_id=grading_id,
                use_cache=use_cache,
                trace_file=trace_file,
                on_done=on_done,
            )
            report = combined_report(reports, trace_file, config.telemetry.otlp_endpoint)
            telemetry: Any = config.telemetry  # what the notes read: its protocol
        else:
            telemetry = open_telemetry(config, trace_file)
            try:
                await arun_target(
                    plan,
                    store=store,
                    grading_id=grading_id,
                    tracer=telemetry.tracer,
                    on_done=on_done,
                    before_commit=telemetry.flush_trace_file,
                )
            finally:
                report = telemetry.shutdown()
        if report.trace_file_failed:
            lost.append(report.trace_file_failed)
        notes += telemetry_notes(config, plan.target.name, telemetry, report)
    return notes


def _connect_executor(config: Config, executor: str | None, workers: int | None) -> None:
    """With `executor: ray`, Ray is importable and joined (or started) before anything runs."""
    if (executor or config.executor) == "ray":
        from .ray_executor import connect_ray

        connect_ray(config.ray_address, workers or config.workers)


def stored_results(
    store: ResultStore,
    grading_id: int,
    targets: Sequence[TargetConfig],
    identity: dict,
    attached: dict,
) -> list[TargetResult]:
    out = []
    for target in targets:
        questions = store.load_scores(grading_id=grading_id, target=target.name)
        tid = identity["targets"].get(target.name, {})
        out.append(
            TargetResult(
                target=target.name,
                mode=target.mode,
                dataset=str(tid.get("dataset", {}).get("path", target.dataset)),
                questions=questions,
                verdict=evaluate_gate(
                    questions,
                    target.gate,
                    must_pass=[
                        a.attachment.grader.id
                        for a in attached.get(target.name, [])
                        if a.attachment.spec.must_pass
                    ],
                    selected=tid.get("selected"),
                    run_id=identity.get("run_id"),
                ),
                graders=summarise_graders(questions),
                advisories=_module_note(target, attached.get(target.name, []))
                + _advisories(target.mode, attached.get(target.name, []), questions),
            )
        )
    return out


def _plan(
    target: TargetConfig,
    questions: list[Any],
    dataset: Any,
    attached: list,
    services: Any,
    *,
    load_agent: bool = True,
) -> TargetPlan:
    plan = TargetPlan(
        target=target,
        questions=questions,
        attached=attached,
        services=services,
        dataset_name=dataset.name,
        ordinals={str(q.id): i for i, q in enumerate(questions)},
        factory=target.load_factory() if load_agent else None,
        environment_factory=target.load_environment_factory() if load_agent else None,
    )
    # built now, before any run directory exists: a factory that raises is exit 4, no trace
    if load_agent:
        plan.shared = build_shared(plan)
    return plan


@dataclass(slots=True)
class PreparedRun:
    """A new run: every input checked, its directory created and its identity written; no
    question asked yet (`prepare_run`)."""

    run_id: str
    run_dir: Path
    identity: dict[str, Any]
    targets: list[TargetConfig]
    """The selected targets, in config order."""
    plans: dict[str, TargetPlan]
    """Each target's plan over its selected questions (agent factories loaded), by name."""
    attached: dict[str, list[AttachedGrader]]
    """Each target's graders, by name."""
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Question runs over every target: its selected questions times its repeats."""
        return sum(len(plan.questions) * plan.target.repeats for plan in self.plans.values())


def prepare_run(
    config: Config,
    selection: Selection = Selection(),
    *,
    use_cache: bool = True,
    run_id: str | None = None,
    load_agents: bool = True,
) -> PreparedRun:
    """Check everything that can be invalid (targets, datasets, graders, rubric refs, agent
    factories), then create the run directory and write its identity. Asks no question:
    `astart_run` runs them all, the pytest plugin's `RunSession` one at a time. Without
    `load_agents` (grading traces made elsewhere) the agents are neither imported nor built."""
    targets = config.select_targets(selection.targets)
    if selection.repeats is not None:
        targets = [dataclasses.replace(t, repeats=selection.repeats) for t in targets]
    run_id = run_id or new_run_id()
    run_dir = config.runs_dir / run_id
    services = run_services(config, run_dir, use_cache)
    prepared = []
    ordinals: dict[str, dict[str, int]] = {}
    selected_total: dict[str, int] = {}
    for target in targets:
        dataset, questions, ordinals[target.name] = _select_share(target, selection)
        selected_total[target.name] = len(ordinals[target.name])
        # the pre-flight `tracegrade validate` runs: the same problems, located, in one error
        if selection.goal is None:  # with --goal the target's own graders are not used
            raise_problems(check_graders(target, services=services), ConfigError)
        judge_configured = services.judge_provider is not None
        raise_problems(
            check_goals(target, questions, goal=selection.goal, judge_configured=judge_configured)
            + check_simulated_users(target, questions, judge_configured=judge_configured),
            ConfigError,
        )
        specs, module = effective_graders(target, goal=selection.goal)
        attached = attach_graders(
            specs,
            grading_module=module,
            services=services,
            config_file=target.config_file,
        )
        raise_problems(check_rubric_refs(target.dataset, questions, services.rubrics), RubricError)
        raise_problems(
            check_state_environment(target, target.dataset, questions, specs), ConfigError
        )
        prepared.append((target, dataset, questions, attached))
    if selection.ids:  # a plain id naming no question of any target is a typo (exit 4)
        from ..inputs.dataset import check_id_patterns

        check_id_patterns(selection.ids, (q.id for p in prepared for q in p[1].questions))
    total = sum(len(p[2]) * p[0].repeats for p in prepared)
    if sum(selected_total.values()) == 0 or (total == 0 and selection.shard is None):
        raise NothingToRunError("the selection matched no question", hint=_describe(selection))
    plans = {
        t.name: _plan(t, qs, ds, at, services, load_agent=load_agents)
        for t, ds, qs, at in prepared
        if qs
    }
    for plan in plans.values():
        plan.ordinals = ordinals[plan.target.name]
        if plan.target.mode == "agent":  # what validate checks on the built graph
            raise_problems(check_run_graph(plan.target, plan.questions, plan.shared), ConfigError)
    run_dir.mkdir(parents=True, exist_ok=False)
    identity: dict[str, Any] = {
        "run_id": run_id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config_path": str(config.path.resolve()),
        "selection": selection.as_dict(),
        "judge": _judge_identity(services),
        "packages": package_versions(),
        "git_commit": git_commit(config.base_dir),
        "targets": {},
    }
    for target, dataset, questions, attached in prepared:
        copy = (
            copy_grading_module(target.grading_module, run_dir, target.name)
            if target.grading_module
            else None
        )
        if copy is not None and target.grading_module is not None:
            _copy_judge_files(attached, target.grading_module.parent, (run_dir / copy).parent)
        identity["targets"][target.name] = _target_identity(target, dataset, attached, copy)
        # each rubric file by hash: an edit in place under the same version is refused later
        refs = [q.row().get("rubric_ref") for q in questions]
        identity["targets"][target.name]["rubrics"] = rubric_files(
            services.rubrics, (str(ref) for ref in refs if ref)
        )
        # how many questions the selection held: fewer rows later means an interrupted run
        identity["targets"][target.name]["selected"] = len(questions)
        if selection.shard is not None:  # what `merge` checks and counts the whole run by
            identity["targets"][target.name]["selected_total"] = selected_total[target.name]
    # The snapshot holds the target's config as authored (a policy text, a system prompt):
    # values that look like secrets are redacted; keys are settings, kept for re-grading.
    identity = config.redaction.value(identity, by_name=False)
    write_identity(run_dir, identity)
    notes = redaction_notes(config)
    notes += [f"{t.name}: the selection matched no question" for t, _, qs, _ in prepared if not qs]
    attached_by_target = {t.name: at for t, _, _, at in prepared}
    return PreparedRun(run_id, run_dir, identity, targets, plans, attached_by_target, notes)


def _copy_judge_files(attached: Sequence[AttachedGrader], module_dir: Path, dest: Path) -> None:
    """Judges defined in a file beside the grading module travel with the run's copy of it,
    so re-grading with the stored graders finds them (their hash says if they changed)."""
    for a in attached:
        source = getattr(a.grader, "source_file", None)
        if not isinstance(source, Path):
            continue
        try:
            relative = source.resolve().relative_to(module_dir.resolve())
        except ValueError:  # outside the module's folder: read from where it is
            continue
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest / relative)


def new_grading(store: ResultStore, run: PreparedRun) -> int:
    """The run's first grading, in its store (the store is new)."""
    store.set_meta("run_id", run.run_id)
    return store.new_grading(mode="run", graders=_grader_specs(run.identity))


async def astart_run(
    config: Config,
    selection: Selection = Selection(),
    *,
    use_cache: bool = True,
    on_start: Callable[[Path, int], None] | None = None,
    on_done: Callable[[QuestionScore], None] | None = None,
    run_id: str | None = None,
    workers: int | None = None,
    executor: str | None = None,
) -> RunOutcome:
    """Run the selected targets' questions in a new run directory and score them.

    Everything that can be invalid (targets, datasets, graders, rubric refs, agent factories) is
    checked before the run directory is created (`prepare_run`). `on_start(run_dir, total)` is
    called once the run directory exists; `on_done(question)` after each question is committed.
    `workers` (default: the config's `workers:`) runs each target in that many processes
    (`tracegrade.execution.workers`); `executor` (default: the config's `executor:`) `"ray"` runs them
    on Ray actors (`tracegrade.execution.ray_executor`).
    """
    _connect_executor(config, executor, workers)  # before any run directory exists
    run = prepare_run(config, selection, use_cache=use_cache, run_id=run_id)
    notes = list(run.notes)
    lost: list[int] = []
    with (
        ResultStore.in_run_dir(run.run_dir, redaction=config.redaction) as store,
        run_lock(run.run_dir, read_holder=lambda: store.meta("holder")),
    ):
        store.set_meta("holder", holder_text())
        grading_id = new_grading(store, run)
        if on_start is not None:
            on_start(run.run_dir, run.total)
        notes += await _arun_plans(
            list(run.plans.values()),
            lost=lost,
            config=config,
            run_dir=run.run_dir,
            store=store,
            grading_id=grading_id,
            on_done=on_done,
            workers=workers or config.workers,
            use_cache=use_cache,
            executor=executor or config.executor,
        )
        results = stored_results(store, grading_id, run.targets, run.identity, run.attached)
    return RunOutcome(run.run_id, run.run_dir, results, run.identity, grading_id, notes, sum(lost))


def _describe(selection: Selection) -> str:
    parts = [f"--split {selection.split}"] if selection.split else []
    parts += [f"--bundle {b}" for b in selection.bundles] + [f"--tag {t}" for t in selection.tags]
    parts += [f"--id {i}" for i in selection.ids]
    return "filters: " + " ".join(parts) if parts else "the datasets hold no enabled question"


def _grader_specs(identity: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"target": name, **spec} for name, t in identity["targets"].items() for spec in t["graders"]
    ]


def open_run(config: Config, run: str | Path) -> tuple[Path, dict[str, Any]]:
    run_dir = Path(run)
    if not (run_dir / "identity.json").is_file():
        run_dir = config.runs_dir / str(run)
    if not (run_dir / "identity.json").is_file():
        raise InputError(f"no run {str(run)!r}: no identity.json in {run_dir}", key="RUN")
    return run_dir, read_identity(run_dir)


def stored_attachments(
    identity: dict, run_dir: Path, services: Any
) -> dict[str, list[AttachedGrader]]:
    return {
        name: attach_from_specs(t["graders"], run_dir=run_dir, services=services)
        for name, t in identity["targets"].items()
    }


async def aresume_run(
    config: Config,
    run: str | Path,
    *,
    use_cache: bool = True,
    on_start: Callable[[Path, int], None] | None = None,
    on_done: Callable[[QuestionScore], None] | None = None,
    workers: int | None = None,
    executor: str | None = None,
) -> RunOutcome:
    """Finish an interrupted run: ask only the questions it has no committed row for, with
    the graders the run stored, then score the whole run (`workers`, `executor`: as for
    `astart_run`)."""
    run_dir, identity = open_run(config, run)
    stored_config = identity.get("config_path")
    if stored_config and Path(stored_config) != config.path.resolve():
        raise InputError(
            f"run {identity['run_id']} was started with the config {stored_config}: a resume "
            "reads the config the run started with",
            file=str(config.path),
            key="--config",
            hint=f"pass --config {stored_config}",
        )
    refuse_changed_rubrics(identity)
    _connect_executor(config, executor, workers)
    selection = Selection.from_dict(identity.get("selection") or {})
    targets = [config.select_targets([name])[0] for name in identity["targets"]]
    services = run_services(config, run_dir, use_cache)
    attached = stored_attachments(identity, run_dir, services)
    notes: list[str] = redaction_notes(config)
    lost: list[int] = []
    with (
        ResultStore.in_run_dir(run_dir, redaction=config.redaction) as store,
        run_lock(run_dir, read_holder=lambda: store.meta("holder")),
    ):
        store.set_meta("holder", holder_text())
        gradings = store.gradings()
        if gradings:
            grading_id = min(g["grading_id"] for g in gradings)
        else:  # the disk filled before the run's first grading was written
            store.set_meta("run_id", identity["run_id"])
            grading_id = store.new_grading(mode="run", graders=_grader_specs(identity))
        plans = []
        for target in targets:
            dataset, questions, ordinals = _select_share(target, selection)
            stored_sha = identity["targets"][target.name]["dataset"]["sha256"]
            if dataset.sha256 != stored_sha:
                raise InputError(
                    f"the dataset changed since the run started (sha256 {stored_sha[:12]} -> "
                    f"{dataset.sha256[:12]}): resuming would grade the rest against other "
                    "questions",
                    file=str(target.dataset),
                    key=f"/targets/{target.name}/dataset",
                    hint=HINT,
                )
            # Per trial: the repeats the run started with (its manifest), each trial missing.
            repeats = int(identity["targets"][target.name].get("repeats") or 1)
            done = store.finished_trials(target.name)
            trials = {
                str(q.id): [t for t in range(repeats) if (str(q.id), t) not in done]
                for q in questions
            }
            missing = [q for q in questions if trials[str(q.id)]]
            plan = _plan(target, missing, dataset, attached[target.name], services)
            plan.ordinals = ordinals
            plan.trials = trials
            plans.append(plan)
            if repeats > 1:
                left = sum(len(t) for t in trials.values())
                notes.append(
                    f"{target.name}: resumed {left} of {len(questions) * repeats} trial(s) "
                    f"({len(missing)} question(s))"
                )
            else:
                notes.append(
                    f"{target.name}: resumed {len(missing)} of {len(questions)} question(s)"
                )
        if on_start is not None:
            on_start(run_dir, sum(p.work_count() for p in plans))
        notes += await _arun_plans(
            [p for p in plans if p.questions],
            lost=lost,
            config=config,
            run_dir=run_dir,
            store=store,
            grading_id=grading_id,
            on_done=on_done,
            workers=workers or config.workers,
            use_cache=use_cache,
            executor=executor or config.executor,
        )
        results = stored_results(store, grading_id, targets, identity, attached)
    return RunOutcome(identity["run_id"], run_dir, results, identity, grading_id, notes, sum(lost))


def start_run(config: Config, selection: Selection = Selection(), **options: Any) -> RunOutcome:
    """`astart_run` for callers without an event loop (the CLI)."""
    return run_without_loop("start_run", lambda: astart_run(config, selection, **options))


def resume_run(config: Config, run: str | Path, **options: Any) -> RunOutcome:
    """`aresume_run` for callers without an event loop (the CLI)."""
    return run_without_loop("resume_run", lambda: aresume_run(config, run, **options))
