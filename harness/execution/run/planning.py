"""A target's graders as its check plan has them: what `run`, `validate`, `targets --plan`, the
pytest plugin and the trace graders all attach, decided once per target before any agent runs
(`tracegrade.verdicts.plan` holds the rules)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...inputs.config import GraderEntry, TargetConfig
from ...verdicts.plan import CheckPlan, check_plan
from ..question.grading import AttachedGrader, attach_graders

if TYPE_CHECKING:
    from ...graders.base import GraderServices
    from ...graders.registry import GraderRegistry
    from ...inputs.dataset import Question

__all__ = ["GOAL_JUDGE", "PLAN_HINT", "attach_planned", "effective_graders", "planned"]

PLAN_HINT = (
    "`tracegrade targets --plan` shows which expectation each grader checks from which evidence"
)


GOAL_JUDGE = "goal_judge"


def effective_graders(
    target: TargetConfig, *, goal: str | None = None
) -> tuple[list[GraderEntry], Path | None]:
    """The grader specs and grading module a run of `target` uses: with `goal` (`--goal
    TEXT`), the goal judge alone against that text; a target with neither `graders:` nor a
    grading module is scored by the goal judge against each question's own goal."""
    if goal is not None:
        return [GraderEntry(id=GOAL_JUDGE, options={"goal": goal})], None
    if not target.graders and target.grading_module is None:
        return [GraderEntry(id=GOAL_JUDGE)], None
    return list(target.graders), target.grading_module


def planned(
    target: TargetConfig,
    questions: Sequence[Question | Mapping[str, object]],
    attached: list[AttachedGrader],
    *,
    services: GraderServices,
    source: str,
    registry: GraderRegistry | None = None,
) -> tuple[list[AttachedGrader], CheckPlan]:
    """`attached` as the target's check plan has it (owners of unattached dataset keys attached
    with the safe defaults; graders not applicable to `source` left out), and the plan."""
    plan = check_plan(
        target,
        questions,
        [a.grader for a in attached],
        source=source,
        judge=services.judge_provider is not None,
        registry=registry,
    )
    if plan.additions:
        # before the grading module's graders, the order a re-grade rebuilds them in
        added = attach_graders(
            plan.additions, grading_module=None, services=services, registry=registry
        )
        module = [a for a in attached if a.spec.source == "module"]
        attached = [a for a in attached if a not in module] + added + module
    return [a for a in attached if a.grader.id not in plan.not_applicable], plan


def attach_planned(
    target: TargetConfig,
    questions: Sequence[Question],
    *,
    services: GraderServices,
    source: str = "run",
    goal: str | None = None,
    registry: GraderRegistry | None = None,
) -> tuple[list[AttachedGrader], CheckPlan]:
    """The target's graders (its `graders:` and grading module, or the goal judge) attached
    and planned over `questions` for `source`."""
    specs, module = effective_graders(target, goal=goal)
    attached = attach_graders(
        specs,
        grading_module=module,
        services=services,
        registry=registry,
        config_file=target.config_file,
    )
    return planned(target, questions, attached, services=services, source=source, registry=registry)
