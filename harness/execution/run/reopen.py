"""A stored run prepared again, from what its directory recorded: for `--resume`
(`prepare_resume`), for re-grading (`prepare_regrade`), for a process joining a run another
one created (`prepare_stored`: the pytest session's xdist workers, `receive --run`). Each
returns the same typed `PreparedRun` a new run's `prepare.prepare_run` does, so start,
resume and re-grade share one path and nothing below preparation takes the whole config.

What the run recorded wins over the config now: its selection, its repeats and its stored
graders; a dataset whose hash changed since the run started is refused (exit 4), and a
resume holds the config and the rubric files to the content the run pinned."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from pathlib import Path

from ...errors import ConfigError, InputError
from ...inputs.config import Config, TargetConfig, parse_gate, parse_grader_entry
from ...rundir.directory import RunDirectory
from ...rundir.manifest import RunManifest
from ...rundir.outcome import Selection
from ..question.grading import AttachedGrader, attach_graders
from .changed import HINT, refuse_changed_rubrics, refuse_other_config
from .planning import effective_graders, planned
from .prepare import plan_of, select_share
from .prepared import PreparedRun, PreparedTarget, RunSettings
from .services import redaction_notes, run_services, stored_attachments

__all__ = ["narrow_to_missing", "prepare_regrade", "prepare_resume", "prepare_stored"]


def prepare_stored(
    config: Config,
    run: str | Path,
    *,
    use_cache: bool = True,
    load_agents: bool = True,
    targets: Collection[str] = (),
    changed_hint: str = HINT,
) -> PreparedRun:
    """The run at `run` (a directory, or an id under the config's `runs_dir`) prepared over the
    selection and the graders it recorded: each of its targets (those named in `targets`,
    when given) with a plan over the questions of its shard, ordinals as in the whole
    selection, the repeats it started with; a dataset whose content changed since is refused
    (`changed_hint` says what to do instead)."""
    settings = RunSettings.of(config)
    directory = RunDirectory.open(run, runs_dir=settings.runs_dir)
    return _prepared(
        config,
        settings,
        directory,
        use_cache=use_cache,
        load_agents=load_agents,
        targets=targets,
        changed_hint=changed_hint,
    )


def _prepared(
    config: Config,
    settings: RunSettings,
    directory: RunDirectory,
    *,
    use_cache: bool,
    load_agents: bool = True,
    targets: Collection[str] = (),
    changed_hint: str = HINT,
) -> PreparedRun:
    manifest = directory.manifest()
    selection = Selection.from_record(manifest.selection)
    services = run_services(settings, directory.path, use_cache)
    attached = stored_attachments(manifest, directory.path, services)
    entries = []
    for name, stored in manifest.targets.items():
        if targets and name not in targets:
            continue
        # the repeats the run started with (`--repeats` included), whatever the config says now
        target = dataclasses.replace(config.select_targets([name])[0], repeats=stored.repeats)
        dataset, questions, ordinals = select_share(target, selection)
        if dataset.sha256 != stored.dataset.sha256:
            raise InputError(
                f"the dataset changed since the run started (sha256 "
                f"{stored.dataset.sha256[:12]} -> {dataset.sha256[:12]}): the rest would be "
                "graded against other questions",
                file=str(target.dataset),
                key=f"/targets/{name}/dataset",
                hint=changed_hint,
            )
        plan = plan_of(target, questions, dataset, attached[name], services, load_agent=load_agents)
        plan.ordinals = ordinals
        plan.run_id = manifest.run_id
        entries.append(PreparedTarget(target=target, attached=tuple(attached[name]), plan=plan))
    return PreparedRun(
        run_id=manifest.run_id,
        directory=directory,
        manifest=manifest,
        settings=settings,
        services=services,
        entries=tuple(entries),
        notes=tuple(redaction_notes(settings.redaction)),
    )


def prepare_resume(config: Config, run: str | Path, *, use_cache: bool = True) -> PreparedRun:
    """An interrupted run prepared to go on (`--resume`): held to the config content and the
    rubric files it started with, its datasets unchanged; each plan holds every question of
    the run's share (`narrow_to_missing` keeps those with no committed row, once the run is
    held)."""
    settings = RunSettings.of(config)
    directory = RunDirectory.open(run, runs_dir=settings.runs_dir)
    manifest = directory.manifest()
    refuse_other_config(manifest, settings)
    refuse_changed_rubrics(manifest)
    return _prepared(config, settings, directory, use_cache=use_cache)


def narrow_to_missing(
    run: PreparedRun, finished: Callable[[str], Collection[tuple[str, int]]]
) -> list[str]:
    """Narrow each of `run`'s plans to the trials with no committed row (`finished(target)`:
    the (question id, trial) pairs the run's store holds); returns what the resume asks."""
    notes = []
    for entry in run.entries:
        plan = entry.plan
        if plan is None:
            continue
        done = finished(entry.name)
        repeats = plan.target.repeats
        trials = {
            str(q.id): [t for t in range(repeats) if (str(q.id), t) not in done]
            for q in plan.questions
        }
        selected = len(plan.questions)
        plan.questions = [q for q in plan.questions if trials[str(q.id)]]
        plan.trials = trials
        if repeats > 1:
            notes.append(
                f"{entry.name}: resumed {plan.work_count()} of {selected * repeats} trial(s) "
                f"({len(plan.questions)} question(s))"
            )
        else:
            notes.append(f"{entry.name}: resumed {len(plan.questions)} of {selected} question(s)")
    return notes


def prepare_regrade(
    config: Config,
    run: str | Path,
    *,
    current: bool = False,
    goal: str | None = None,
    use_cache: bool = True,
) -> PreparedRun:
    """A stored run prepared for re-grading (no agent loaded, no plan): each target as the
    run stored it with the graders the run stored, or with `current` the config's targets and
    graders now (planned over the stored questions), or with `goal` the goal judge alone."""
    settings = RunSettings.of(config)
    directory = RunDirectory.open(run, runs_dir=settings.runs_dir)
    manifest = directory.manifest()
    refuse_changed_rubrics(manifest)  # an edit in place under the same version
    services = run_services(settings, directory.path, use_cache)
    entries: list[PreparedTarget] = []
    if goal is not None:
        if services.judge_provider is None:
            raise ConfigError(
                "--goal grades with the goal judge, which needs a `judge:` block in the config",
                file=str(settings.config_path),
                key="/judge",
            )
        for name in manifest.targets:
            target = _stored_target(config.targets.get(name), name, manifest)
            goal_specs, _ = effective_graders(target, goal=goal)
            goal_graders = attach_graders(goal_specs, grading_module=None, services=services)
            entries.append(_entry(target, goal_graders))
    elif current:
        for name in manifest.targets:
            if name not in config.targets:
                raise ConfigError(
                    f"target {name!r} of the run is not in the config any more", key="/targets"
                )
            target = config.targets[name]
            with directory.read_store() as stored_runs:
                rows = [r.answer.row for r in stored_runs.load_runs(name)]
            # the config's graders now, as its check plan has them for a stored run
            now, _ = planned(
                target,
                rows,
                attach_graders(
                    target.graders, grading_module=target.grading_module, services=services
                ),
                services=services,
                source="grade",
            )
            entries.append(_entry(target, now))
    else:
        stored = stored_attachments(manifest, directory.path, services)
        entries = [
            _entry(_stored_target(config.targets.get(name), name, manifest), stored[name])
            for name in manifest.targets
        ]
    return PreparedRun(
        run_id=manifest.run_id,
        directory=directory,
        manifest=manifest,
        settings=settings,
        services=services,
        entries=tuple(entries),
        notes=tuple(redaction_notes(settings.redaction)),
    )


def _entry(target: TargetConfig, attached: list[AttachedGrader]) -> PreparedTarget:
    return PreparedTarget(target=target, attached=tuple(attached), plan=None)


def _stored_target(current: TargetConfig | None, name: str, manifest: RunManifest) -> TargetConfig:
    """The target as the run stored it (gate and limits from the run's own config), falling
    back to the config's target now (`current`) for what the snapshot cannot rebuild."""
    stored = manifest.targets[name]
    raw = stored.config
    return TargetConfig(
        name=name,
        mode=stored.mode,
        factory=raw.get("agent") or raw.get("chat_model") or "",
        dataset=Path(stored.dataset.path),
        response_char_limit=int(
            raw.get("response_char_limit", current.response_char_limit if current else 4000)
        ),
        graders=[parse_grader_entry(g) for g in raw.get("graders") or []],
        gate=parse_gate(raw.get("gate")),
    )
