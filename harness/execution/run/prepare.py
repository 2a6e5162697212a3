"""A new run prepared: its questions selected (with the shard's share), every input checked
(targets, datasets, graders, rubric refs, agent factories), then its directory created and its
manifest written. Nothing is asked yet: `tracegrade.execution.run.lifecycle` runs the questions,
`tracegrade.execution.run.session` (the pytest plugin) one at a time."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ConfigError, NothingToRunError, RubricError
from ...inputs.config import Config, TargetConfig
from ...inputs.sourcefile import raise_problems
from ...rundir.directory import RunDirectory
from ...rundir.identity import git_commit, package_versions, sha256_file, validate_manifest
from ...rundir.manifest import (
    MANIFEST_VERSION,
    DatasetRef,
    GradingModuleRef,
    RubricFile,
    RunManifest,
    TargetManifest,
    VariantRef,
)
from ...rundir.outcome import Selection, new_run_id
from ...verdicts.plan import CheckPlan
from ..question.grading import AttachedGrader
from ..question.runner import TargetPlan, build_shared
from .changed import rubric_files
from .planning import PLAN_HINT, attach_planned
from .preflight import (
    check_goals,
    check_graders,
    check_rubric_refs,
    check_run_graph,
    check_simulated_users,
    check_state_environment,
)
from .prepared import PreparedRun, PreparedTarget, RunSettings
from .services import judge_identity, redaction_notes, run_services
from .shards import shard_questions

if TYPE_CHECKING:
    from ...graders.base import GraderServices
    from ...inputs.dataset import Dataset, Question

__all__ = [
    "PreparedRun",
    "describe",
    "plan_of",
    "prepare_run",
    "select",
    "select_share",
    "selected_ids",
]


def select_share(
    target: TargetConfig, selection: Selection
) -> tuple[Dataset, list[Question], dict[str, int]]:
    """(dataset, the questions of this run's shard, ordinals in the whole selection): a
    shard's questions keep the positions they have in the unsharded run."""
    dataset, questions = select(target, selection)
    ordinals = {str(q.id): i for i, q in enumerate(questions)}
    return dataset, shard_questions(target.name, questions, selection.shard), ordinals


def selected_ids(config: Config, selection: Selection) -> set[str]:
    """The ids of the questions `selection` asks of the config's targets (datasets read, no
    agent built): what `run --baseline` checks the baseline against before anything runs."""
    targets = config.select_targets(selection.targets)
    return {str(q.id) for t in targets for q in select_share(t, selection)[1]}


def select(target: TargetConfig, selection: Selection) -> tuple[Dataset, list[Question]]:
    from ...inputs.dataset import load_dataset, select_questions

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


def _target_manifest(
    target: TargetConfig,
    dataset: Dataset,
    attached: Sequence[AttachedGrader],
    module_copy: str | None,
) -> TargetManifest:
    specs = [
        a.spec.model_copy(update={"module": module_copy}) if a.spec.source == "module" else a.spec
        for a in attached
    ]
    module = target.grading_module
    return TargetManifest(
        mode=target.mode,
        repeats=target.repeats,
        config=target.raw,
        dataset=DatasetRef(path=str(target.dataset), sha256=dataset.sha256, name=dataset.name),
        grading_module=GradingModuleRef(
            path=str(module), sha256=sha256_file(module), copy_path=module_copy
        )
        if module
        else None,
        graders=specs,
        variant=VariantRef(of=target.variant_of, name=target.variant, args=target.factory_args)
        if target.variant
        else None,
    )


def plan_of(
    target: TargetConfig,
    questions: list[Question],
    dataset: Dataset,
    attached: list[AttachedGrader],
    services: GraderServices,
    *,
    load_agent: bool = True,
) -> TargetPlan:
    """A target's plan over `questions` (its agent factory loaded, its shared pieces built)."""
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


def prepare_run(
    config: Config,
    selection: Selection = Selection(),
    *,
    use_cache: bool = True,
    run_id: str | None = None,
    load_agents: bool = True,
    source: str = "run",
) -> PreparedRun:
    """Check everything that can be invalid (targets, datasets, graders, rubric refs, agent
    factories) and build each target's check plan for `source` ("run", "pytest", "traces"),
    then create the run directory and write its identity. Asks no question:
    `astart_run` runs them all, the pytest plugin's `RunSession` one at a time. Without
    `load_agents` (grading traces made elsewhere) the agents are neither imported nor built."""
    targets = config.select_targets(selection.targets)
    if selection.repeats is not None:
        targets = [dataclasses.replace(t, repeats=selection.repeats) for t in targets]
    settings = RunSettings.of(config)
    run_id = run_id or new_run_id()
    run_dir = settings.runs_dir / run_id
    services = run_services(settings, run_dir, use_cache)
    prepared = []
    checks: dict[str, CheckPlan] = {}
    ordinals: dict[str, dict[str, int]] = {}
    selected_total: dict[str, int] = {}
    for target in targets:
        dataset, whole = select(target, selection)
        questions = shard_questions(target.name, whole, selection.shard)
        ordinals[target.name] = {str(q.id): i for i, q in enumerate(whole)}
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
        # planned over the whole selection: every shard attaches the same graders
        attached, checks[target.name] = attach_planned(
            target, whole, services=services, source=source, goal=selection.goal
        )
        raise_problems(check_rubric_refs(target.dataset, questions, services.rubrics), RubricError)
        raise_problems(
            check_state_environment(
                target, target.dataset, questions, [a.grader for a in attached]
            ),
            ConfigError,
        )
        prepared.append((target, dataset, questions, attached))
    if selection.ids:  # a plain id naming no question of any target is a typo (exit 4)
        from ...inputs.dataset import check_id_patterns

        check_id_patterns(selection.ids, (q.id for p in prepared for q in p[1].questions))
    total = sum(len(p[2]) * p[0].repeats for p in prepared)
    typos = _label_typos(selection, [q for p in prepared for q in p[1].questions])
    if sum(selected_total.values()) == 0 or (total == 0 and selection.shard is None):
        hint = "; ".join([describe(selection), *typos])
        raise NothingToRunError("the selection matched no question", hint=hint)
    nothing = [checks[t.name].nothing_checkable for t, _, qs, _ in prepared if qs]
    if nothing and all(nothing):
        raise NothingToRunError("; ".join(str(n) for n in nothing), hint=PLAN_HINT)
    plans = {
        t.name: plan_of(t, qs, ds, at, services, load_agent=load_agents)
        for t, ds, qs, at in prepared
        if qs
    }
    for plan in plans.values():
        plan.ordinals = ordinals[plan.target.name]
        if load_agents and plan.target.mode == "agent":  # what validate checks on the built graph
            raise_problems(check_run_graph(plan.target, plan.questions, plan.shared), ConfigError)
    run = RunDirectory.create(config.runs_dir, run_id)
    manifest = RunManifest(
        version=MANIFEST_VERSION,
        run_id=run_id,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        config_path=str(config.path.resolve()),
        # what a resume pins: the config's content (it may be restored or moved elsewhere)
        config_sha256=config.content_sha256,
        selection=selection.record(),
        judge=judge_identity(services),
        pricing=config.pricing.describe(),
        packages=package_versions(),
        git_commit=git_commit(config.base_dir),
        targets={},
    )
    for target, dataset, questions, attached in prepared:
        copy = (
            run.copy_grading_module(target.grading_module, target.name)
            if target.grading_module
            else None
        )
        if copy is not None and target.grading_module is not None:
            _copy_judge_files(attached, target.grading_module.parent, (run.path / copy).parent)
        entry = _target_manifest(target, dataset, attached, copy)
        entry.plan = checks[target.name].as_dict()
        # each rubric file by hash: an edit in place under the same version is refused later
        refs = [q.row().get("rubric_ref") for q in questions]
        entry.rubrics = {
            ref: RubricFile(**f)
            for ref, f in rubric_files(services.rubrics, (str(r) for r in refs if r)).items()
        }
        # how many questions the selection held: fewer rows later means an interrupted run
        entry.selected = len(questions)
        if selection.shard is not None:  # what `merge` checks and counts the whole run by
            entry.selected_total = selected_total[target.name]
        manifest.targets[target.name] = entry
    # The snapshot holds the target's config as authored (a policy text, a system prompt):
    # values that look like secrets are redacted; keys are settings, kept for re-grading.
    manifest = validate_manifest(config.redaction.value(manifest.to_json(), by_name=False))
    run.write_manifest(manifest)
    notes = redaction_notes(settings.redaction) + typos
    notes += [f"{t.name}: the selection matched no question" for t, _, qs, _ in prepared if not qs]
    entries = tuple(
        PreparedTarget(target=t, attached=tuple(at), plan=plans.get(t.name))
        for t, _, _, at in prepared
    )
    return PreparedRun(
        run_id=run_id,
        directory=run,
        manifest=manifest,
        settings=settings,
        services=services,
        entries=entries,
        notes=tuple(notes),
    )


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


def _label_typos(selection: Selection, questions: Sequence[Question]) -> list[str]:
    """A `--tag` or `--bundle` no question of the targets' datasets carries, with a
    did-you-mean."""
    from ...inputs.dataset import unknown_label_hints

    tags = (t for q in questions for t in q.tags or ())
    bundles = (q.bundle for q in questions if q.bundle)
    return unknown_label_hints(selection.tags, tags) + unknown_label_hints(
        selection.bundles, bundles, flag="--bundle"
    )


def describe(selection: Selection) -> str:
    parts = [f"--split {selection.split}"] if selection.split else []
    parts += [f"--bundle {b}" for b in selection.bundles] + [f"--tag {t}" for t in selection.tags]
    parts += [f"--id {i}" for i in selection.ids]
    return "filters: " + " ".join(parts) if parts else "the datasets hold no enabled question"
