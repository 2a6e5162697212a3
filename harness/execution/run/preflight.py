"""The run's pre-flight: everything `tracegrade run` would reject about a target, found before
anything runs, each problem naming file, line and key with a did-you-mean where one helps.

`tracegrade validate` runs all of it (and, unless `--no-build`, builds each agent target's graph
once to check the tool names its dataset's expectations use); `start_run` runs the checks that
need no graph, so the two reject the same input with the same words.

- grader ids and options: an unknown id or an option the grader's constructor does not take,
  at `/targets/<t>/graders/<i>` of the config;
- the grading module, and a grader attached twice;
- the agent, chat model and environment factory references (`load_object` names the module's
  callables in its did-you-mean);
- every `rubric_ref` of the dataset, at its line in the dataset file;
- every `expected_tools` `tool` and `after` name, and every tool name of a `trajectory`, against
  the built graph's tools and agents;
- a target scored by the goal judge (no graders, or `--goal`): a `judge:` block, and a goal for
  every question (its own `goal`, or `--goal TEXT`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError, TracegradeError, suggest
from ...inputs.config import Config, TargetConfig
from ...inputs.sourcefile import Problem
from ...records import GraderSpec

if TYPE_CHECKING:
    from ...graders.base import Grader, GraderServices
    from ...graders.registry import GraderRegistry
    from ...graders.rubrics import RubricStore
    from ...inputs.config import GraderEntry
    from ...inputs.dataset import Question
    from ..question.grading import AttachedGrader
from .graph_checks import (
    _DatasetLines,
    built_graph,
    check_expected_tools,
    check_graph,
    check_run_graph,
    close_quietly,
    target_catalog,
)
from .planning import GOAL_JUDGE, attach_planned, effective_graders

__all__ = [
    "Preflight",
    "check_expected_tools",
    "check_goals",
    "check_graders",
    "check_graph",
    "check_rubric_refs",
    "check_run_graph",
    "check_simulated_users",
    "check_state_environment",
    "effective_graders",
    "preflight",
    "target_catalog",
]

log = logging.getLogger(__name__)

_SPEC_KEYS = ("id", *GraderSpec.model_fields)


@dataclass
class Preflight:
    """What the pre-flight found."""

    problems: list[Problem] = field(default_factory=list)
    """Everything a run would reject, in config then dataset order."""
    notes: list[str] = field(default_factory=list)
    """What was not checked, and why (a graph not built, a graph whose tools are hidden)."""
    plans: dict[str, dict[str, object]] = field(default_factory=dict)
    """Each target's check plan over its whole dataset (`CheckPlan.as_dict()`)."""


def check_simulated_users(
    target: TargetConfig, questions: Iterable[Question], *, judge_configured: bool
) -> list[Problem]:
    """A question with a simulated user (`user:`) needs the judge model to play it."""
    users = [str(q.id) for q in questions if getattr(q, "user", None) is not None]
    if not users or judge_configured:
        return []
    shown = ", ".join(users[:5]) + (", ..." if len(users) > 5 else "")
    return [
        target.problem(
            (),
            f"target {target.name!r}: {len(users)} question(s) have a simulated user ({shown}), "
            "which plays on the judge model: the config has no `judge:` block",
            "add judge: {provider: openai-compatible, base_url: ..., model: ...}",
        )
    ]


def check_goals(
    target: TargetConfig,
    questions: Iterable[Question],
    *,
    goal: str | None,
    judge_configured: bool,
) -> list[Problem]:
    """Problems of a target scored by the goal judge: no `judge:` block to ask, or questions
    with no goal to judge against (its own `goal`, a `goal:` option, or `--goal`)."""
    specs, _ = effective_graders(target, goal=goal)
    goal_specs = [s for s in specs if s.id == GOAL_JUDGE]
    if not goal_specs:
        return []
    default = goal is not None or (not target.graders and target.grading_module is None)
    why = "--goal" if goal is not None else "it has no graders" if default else "goal_judge"
    problems = []
    if not judge_configured:
        problems.append(
            target.problem(
                (),
                f"target {target.name!r} is scored by the goal judge ({why}), which needs a "
                "`judge:` block in the config",
                "add judge: {provider: openai-compatible, base_url: ..., model: ...}",
            )
        )
    if all(s.options.get("goal") for s in goal_specs):
        return problems
    missing = [str(q.id) for q in questions if not getattr(q, "goal", None)]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        if default:
            message = (
                f"target {target.name!r} has no graders and {len(missing)} question(s) have no "
                f"goal ({shown}): nothing could score them"
            )
        else:
            message = (
                f"target {target.name!r}: goal_judge has no goal option and {len(missing)} "
                f"question(s) have no goal ({shown})"
            )
        problems.append(
            target.problem(
                (),
                message,
                "list `graders:`, add a grading module, give each question a `goal:`, or pass "
                "--goal TEXT",
            )
        )
    return problems


def _from_error(exc: TracegradeError, fallback: Problem) -> list[Problem]:
    """An error's own problems, or one Problem at its location (the fallback's when it has
    none)."""
    listed = exc.context.get("problems")
    if listed:
        return list(listed)
    if exc.file is None:
        hint = exc.hint if exc.hint is not None else fallback.hint
        return [Problem(fallback.file, fallback.line, fallback.pointer, exc.message, None, hint)]
    return [Problem(exc.file, exc.line, exc.key or "", exc.message, exc.question_id, exc.hint)]


def _accepted_options(cls: type) -> list[str] | None:
    """The keyword options a grader's constructor takes; None when it takes any (**options).
    A `**spec` catch-all (code graders) takes only the `GraderSpec` keys, which a config writes
    beside the id and never passes as options."""
    try:
        params = inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD and p.name != "spec" for p in params):
        return None
    return [
        p.name
        for p in params
        if p.name not in ("self", "services") and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


def check_graders(
    target: TargetConfig, *, services: GraderServices, registry: GraderRegistry | None = None
) -> list[Problem]:
    """Problems of the target's `graders:` list (unknown ids and options, with did-you-mean;
    options a grader rejects) and of its grading module, located in the config."""
    from ..question.grading import attach_graders

    if registry is None:
        from ...graders.registry import load_registry

        registry = load_registry()
    problems: list[Problem] = []
    for index, spec in enumerate(target.graders):
        listed = target.raw.get("graders") or []
        written_as_id = index < len(listed) and isinstance(listed[index], str)
        at: tuple[str | int, ...] = ("graders", index)
        try:
            cls = registry.get(spec.id)
        except InputError as exc:
            problems.append(
                target.problem(at if written_as_id else (*at, "id"), exc.message, exc.hint)
            )
            continue
        accepted = _accepted_options(cls)
        if accepted is not None:
            bad = [k for k in spec.options if k not in accepted]
            for key in bad:
                close = suggest(key, [*accepted, *_SPEC_KEYS])
                if close:
                    hint = f"did you mean {close!r}?"
                else:
                    hint = f"{spec.id} takes {', '.join(accepted) or 'no options'}"
                message = f"grader {spec.id!r} has no option {key!r}"
                problems.append(target.problem((*at, key), message, hint))
            if bad:
                continue
        try:
            attach_graders(
                [spec],
                grading_module=None,
                services=services,
                registry=registry,
                config_file=target.config_file,
            )
        except TracegradeError as exc:
            problems += _from_error(exc, target.problem(at, exc.message))
        except (TypeError, ValueError) as exc:  # an option value the grader rejects
            problems.append(target.problem(at, f"grader {spec.id!r}: {exc}"))
    if problems:
        return problems
    try:  # the grading module, and a grader attached both ways
        attached = attach_graders(
            target.graders,
            grading_module=target.grading_module,
            services=services,
            registry=registry,
            config_file=target.config_file,
        )
    except TracegradeError as exc:
        at_key = "grading_module" if "grading_module" in target.raw else "graders"
        problems += _from_error(exc, target.problem((at_key,), exc.message))
        return problems
    if services.judge_provider is None:
        problems += _judges_without_a_judge(target, attached)
    return problems


def _judges_without_a_judge(
    target: TargetConfig, attached: Sequence[AttachedGrader]
) -> list[Problem]:
    """A grader that asks a judge model, on a config with no `judge:` block: every agent would
    run and then every judge error (exit 3); refused up front instead. The goal judge has its
    own check (`check_goals`)."""
    listed = [s.id for s in target.graders]
    problems = []
    for a in attached:
        gid = a.grader.id
        if not getattr(a.grader, "llm", False) or gid == GOAL_JUDGE:
            continue
        at: tuple[str | int, ...] = (
            ("graders", listed.index(gid)) if gid in listed else ("graders",)
        )
        problems.append(
            target.problem(
                at,
                f"target {target.name!r}: grader {gid!r} asks a judge model, and the config "
                "has no `judge:` block",
                "add judge: {provider: openai-compatible, base_url: ..., model: ...}, or drop "
                f"{gid!r} from the target",
            )
        )
    return problems


def check_rubric_refs(
    dataset_path: Path, questions: Iterable[Question], rubrics: RubricStore | None
) -> list[Problem]:
    """A problem for every `rubric_ref` that names no rubric, at its line in the dataset."""
    from ..question.grading import criteria_with_rubric

    lines = _DatasetLines(dataset_path)
    problems = []
    for question in questions:
        row = question.row() if hasattr(question, "row") else dict(question)
        if not row.get("rubric_ref"):
            continue
        try:
            criteria_with_rubric(row, rubrics)
        except TracegradeError as exc:
            qid = str(row.get("id"))
            problems.append(lines.problem(qid, ["rubric_ref"], exc.message, exc.hint))
    return problems


def check_state_environment(
    target: TargetConfig,
    dataset_path: Path,
    questions: Iterable[Question],
    specs: Sequence[GraderEntry | Grader],
) -> list[Problem]:
    """State assertions (`metadata.state`) graded by `state_grader` on a target without an
    `environment:` factory: there is no state to check them against, so every such question
    would error. One problem at the first such question, naming how many there are."""
    if target.environment is not None or not any(s.id == "state_grader" for s in specs):
        return []
    rows = [q.row() if hasattr(q, "row") else dict(q) for q in questions]
    stated = [r for r in rows if isinstance(r.get("metadata"), dict) and "state" in r["metadata"]]
    if not stated:
        return []
    more = f" (and {len(stated) - 1} more question(s))" if len(stated) > 1 else ""
    first = str(stated[0].get("id"))
    return [
        _DatasetLines(dataset_path).problem(
            first,
            ["metadata", "state"],
            f"state assertions{more}, but target {target.name!r} declares no `environment:` "
            "factory: state_grader has no state to check them against",
            f"add `environment: path/to/agent.py:make_environment` to target {target.name!r} "
            f"({target.config_file}), or remove state_grader",
        )
    ]


def _check_target(
    target: TargetConfig,
    *,
    services: GraderServices,
    registry: GraderRegistry | None,
    build: bool,
    result: Preflight,
) -> None:
    from ...inputs.dataset import load_dataset

    result.problems += check_graders(target, services=services, registry=registry)
    factories = [("agent" if target.mode == "agent" else "chat_model", target.load_factory)]
    if target.environment is not None:
        factories.append(("environment", target.load_environment_factory))
    loaded = True
    for key, load in factories:
        try:
            load()
        except TracegradeError as exc:
            loaded = False
            result.problems += _from_error(exc, target.problem((key,), exc.message))
    try:
        dataset = load_dataset(target.dataset)
    except TracegradeError as exc:
        result.problems += _from_error(exc, target.problem(("dataset",), exc.message))
        return
    result.problems += check_rubric_refs(target.dataset, dataset.questions, services.rubrics)
    result.problems += check_goals(
        target,
        dataset.questions,
        goal=None,
        judge_configured=services.judge_provider is not None,
    )
    result.problems += check_simulated_users(
        target, dataset.questions, judge_configured=services.judge_provider is not None
    )
    specs, _ = effective_graders(target)
    result.problems += check_state_environment(target, target.dataset, dataset.questions, specs)
    if not result.problems:
        try:
            _, plan = attach_planned(
                target, dataset.questions, services=services, registry=registry
            )
        except TracegradeError as exc:
            result.problems += _from_error(exc, target.problem(("unchecked",), exc.message))
        else:
            result.plans[target.name] = plan.as_dict()
    if target.mode != "agent" or not loaded:
        return
    if not build:
        result.notes.append(f"{target.name}: graph not built, tool names not checked (--no-build)")
        return
    try:
        graph, environment = built_graph(target)
    except TracegradeError as exc:
        result.problems += _from_error(exc, target.problem(("agent",), exc.message))
        return
    try:
        problems, notes = check_graph(target, target.dataset, dataset.questions, graph)
    finally:
        close_quietly(environment)
    result.problems += problems
    result.notes += notes


def preflight(
    config: Config,
    *,
    targets: Sequence[str] = (),
    build: bool = True,
    registry: GraderRegistry | None = None,
) -> Preflight:
    """Every problem `run` would find in the selected targets (all by default), before it
    runs anything. `build=False` skips building graphs (and so the tool-name check)."""
    from ..question.grading import build_services

    result = Preflight()
    try:
        services = build_services(
            judge=config.judge,
            judge_panels=config.judge_panels,
            base_dir=config.base_dir,
            runs_dir=config.runs_dir,
            rubrics=config.rubrics,
            use_cache=False,
        )
    except TracegradeError as exc:
        fallback = Problem(str(config.path), None, "/judge", exc.message, hint=exc.hint)
        result.problems += _from_error(exc, fallback)
        return result
    if registry is None:
        from ...graders.registry import load_registry

        registry = load_registry()
    for target in config.select_targets(list(targets)):
        _check_target(target, services=services, registry=registry, build=build, result=result)
    return result
