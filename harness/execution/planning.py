"""A target's graders as its check plan has them: what `run`, `validate`, `targets --plan`, the
pytest plugin and the trace graders all attach, decided once per target before any agent runs
(`tracegrade.verdicts.plan` holds the rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..inputs.config import TargetConfig
from ..verdicts.plan import CheckPlan, check_plan
from .grading import AttachedGrader, attach_graders
from .preflight import effective_graders

__all__ = ["PLAN_HINT", "attach_planned", "planned"]

PLAN_HINT = (
    "`tracegrade targets --plan` shows which expectation each grader checks from which evidence"
)


def planned(
    target: TargetConfig,
    questions: Sequence[Any],
    attached: list[AttachedGrader],
    *,
    services: Any,
    source: str,
    registry: Any = None,
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
        attached = attached + attach_graders(
            plan.additions, grading_module=None, services=services, registry=registry
        )
    return [a for a in attached if a.grader.id not in plan.not_applicable], plan


def attach_planned(
    target: TargetConfig,
    questions: Sequence[Any],
    *,
    services: Any,
    source: str = "run",
    goal: str | None = None,
    registry: Any = None,
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
