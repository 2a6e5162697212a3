"""The gate: one target's question scores held against its `gate:` settings, and the exit code
of several verdicts combined (DESIGN.md's exit codes: 4 invalid input, 5 nothing to run,
3 incomplete, 2 gate failed, 0). The question scores themselves are `tracegrade.verdicts.scoring`;
the one verdict of a stored run is `tracegrade.rundir.verdict`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ExitCode
from ..inputs.config import GateConfig
from .budgets import apply_budgets, budget_rule, run_budget_reasons
from .scoring import QuestionScore, _fmt, _mean, is_unscored, pass_rate, question_passed

__all__ = ["GateVerdict", "combine_exit_codes", "describe_gate", "evaluate_gate"]


# Highest first: the code a combined outcome reports (DESIGN.md exit codes).
_PRECEDENCE: tuple[int, ...] = (
    ExitCode.INVALID_INPUT,
    ExitCode.NOTHING_TO_RUN,
    ExitCode.INCOMPLETE,
    ExitCode.GATE_FAILED,
    ExitCode.INTERNAL,
    ExitCode.OK,
)


def combine_exit_codes(codes: Iterable[int]) -> int:
    """The one exit code for several outcomes: 4 > 5 > 3 > 2 > 1 > 0."""
    codes = list(codes)
    for code in _PRECEDENCE:
        if code in codes:
            return int(code)
    return int(ExitCode.OK) if not codes else int(max(codes))


@dataclass(slots=True)
class GateVerdict:
    """The verdict of one target's gate over its questions."""

    passed: bool
    """Every gate condition held (ignores the error budget; see `incomplete`)."""
    incomplete: bool
    """More degraded/errored questions than the error budget allows (exit 3)."""
    exit_code: int
    """3 when incomplete, else 2 when the gate failed, else 0."""
    reasons: list[str]
    """Each failed condition in words."""
    questions: int
    """Questions scored in this verdict."""
    errored: int
    """Questions whose agent failed (exception, timeout, capture failure)."""
    degraded: int
    """Questions excluded from the gate: errored agent or a grader error."""
    mean_composite: float | None
    """Mean composite over errored questions (0) and questions without a grader error."""
    mean_objective: float | None
    """Mean objective over errored questions (0) and questions without a grader error."""
    must_pass_failures: int
    critical_failures: int
    required_check_failures: int
    reviews: int
    max_errored: int
    pass_rate: float | None = None
    """Share of questions whose trials all passed (`pass_rate`); None when none is decided."""
    unscored: list[str] = field(default_factory=list)
    """Questions no grader scored (every grader skipped): out of the mean, never passed."""
    rule: str = ""
    """The effective gate in words (`describe_gate`): what this verdict held the run to."""
    failed_questions: list[str] = field(default_factory=list)
    """Questions that failed the pass rule (every trial counted: `q#1` for trial 1)."""

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def describe_gate(gate: GateConfig) -> str:
    """The effective gate in words, defaults included: "every question passes (min_pass_rate
    1), mean composite >= 4, errored questions allowed 0, ..."."""
    parts = []
    if gate.min_pass_rate is None or gate.min_pass_rate <= 0:
        parts.append("no pass-rate bar (min_pass_rate 0)")
    elif gate.min_pass_rate >= 1:
        parts.append("every question passes (min_pass_rate 1)")
    else:
        parts.append(f"pass rate >= {_fmt(gate.min_pass_rate)}")
    if gate.min_mean_composite is not None:
        parts.append(f"mean composite >= {_fmt(gate.min_mean_composite)}")
    parts.append(f"errored questions allowed {gate.max_errored}")
    parts.append(
        "critical rubric failures fail it"
        if gate.zero_critical_failures
        else "critical rubric failures allowed"
    )
    if gate.allow_review:
        parts.append("checks left in Review allowed")
    parts += budget_rule(gate)
    return ", ".join(parts)


def evaluate_gate(
    questions: Sequence[QuestionScore],
    gate: GateConfig,
    *,
    must_pass: Sequence[str] = (),
    selected: int | None = None,
    run_id: str | None = None,
) -> GateVerdict:
    """Decide a target's gate. `must_pass` names the target's must-pass graders; `selected` is
    how many questions the run selected (fewer results: an interrupted run, incomplete, with
    the resume command for `run_id`).

    An errored question (the agent failed) scores 0 in the mean, fails the gate and each
    must-pass grader; a question with a grader error is left out of the mean, but its decided
    must-pass and rubric failures still count (a verdict that was reached is evidence). Both
    count against the error budget. A target that scored nothing is incomplete. A question over
    a per-question budget fails (its `over_budget` set here, from its accounting)."""
    apply_budgets(questions, gate)
    reasons: list[str] = run_budget_reasons(questions, gate)
    degraded = [q for q in questions if q.degraded]
    errored = [q for q in questions if q.errored]
    in_mean = [q for q in questions if q.errored or not q.degraded]
    ran = [q for q in questions if not q.errored]

    must = [(q.question_id, g) for q in ran for g in q.must_pass_failures]
    must += [(q.question_id, gid) for q in errored for gid in must_pass]
    if must:
        names = ", ".join(f"{qid}: {g}" for qid, g in must[:5])
        more = f" and {len(must) - 5} more" if len(must) > 5 else ""
        reasons.append(f"{len(must)} must-pass failure(s) ({names}{more})")
    if errored:
        names = ", ".join(q.question_id for q in errored[:5])
        more = f" and {len(errored) - 5} more" if len(errored) > 5 else ""
        reasons.append(
            f"{len(errored)} errored question(s) ({names}{more}): an errored question fails the gate"
        )
    early = [q for q in ran if q.ended_early]
    if early:
        names = ", ".join(f"{q.question_id} ({q.outcome})" for q in early[:5])
        more = f" and {len(early) - 5} more" if len(early) > 5 else ""
        reasons.append(
            f"{len(early)} question(s) ended before an answer ({names}{more}): "
            "an unexpected interruption fails the gate"
        )
    critical = [(q.question_id, c) for q in ran for c in q.critical_failures]
    if critical and gate.zero_critical_failures:
        reasons.append(f"{len(critical)} critical rubric check failure(s)")
    required = [(q.question_id, c) for q in ran for c in q.required_check_failures]
    if required:
        reasons.append(f"{len(required)} required rubric check failure(s)")
    reviews = [(q.question_id, c) for q in ran for c in q.required_check_reviews]
    if reviews and not gate.allow_review:
        reasons.append(
            f"{len(reviews)} required rubric check(s) left in Review (allow_review: false)"
        )
    mean_composite = _mean([q.composite for q in in_mean if q.composite is not None])
    mean_objective = _mean([q.objective for q in in_mean if q.objective is not None])
    if gate.min_mean_composite is not None:
        if mean_composite is None:
            reasons.append("no question has a composite to hold against min_mean_composite")
        elif mean_composite < gate.min_mean_composite:
            reasons.append(
                f"mean composite {mean_composite:.2f} < min_mean_composite {gate.min_mean_composite:g}"
            )
    rate = pass_rate(questions, critical_fails=gate.zero_critical_failures)
    failed = [
        f"{q.question_id}#{q.trial}" if q.trial else q.question_id
        for q in questions
        if question_passed(q, critical_fails=gate.zero_critical_failures) is False
    ]
    if gate.min_pass_rate is not None and gate.min_pass_rate > 0:
        if rate is None:
            reasons.append("no question has a pass/fail verdict to hold against min_pass_rate")
        elif rate < gate.min_pass_rate:
            more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
            reasons.append(
                f"pass rate {rate:.2f} < min_pass_rate {gate.min_pass_rate:g} "
                f"(failed: {', '.join(failed[:5])}{more})"
            )
    incomplete_reasons = []
    if selected is not None and len(questions) < selected:
        resume = f"tracegrade run --resume {run_id}" if run_id else "tracegrade run --resume"
        incomplete_reasons.append(
            f"evaluation incomplete: {selected - len(questions)} of {selected} selected "
            f"question(s) have no result (the run was interrupted); finish with `{resume}`"
        )
    if len(degraded) > gate.max_errored:
        incomplete_reasons.append(
            f"evaluation incomplete: {len(degraded)} degraded/errored question(s) "
            f"({len(errored)} agent error(s)) exceeds max_errored {gate.max_errored}"
        )
    # A required check waiting in Review holds the gate (above); it is not "nothing scored".
    if (
        (questions or selected)
        and not any(q.composite is not None for q in in_mean)
        and not (reviews and not gate.allow_review)
    ):
        incomplete_reasons.append(
            f"evaluation incomplete: nothing was scored ({len(questions)} question(s), "
            f"{len(degraded) - len(errored)} degraded, the rest skipped by every grader)"
        )
    passed = not reasons
    reasons = incomplete_reasons + reasons
    incomplete = bool(incomplete_reasons)
    if incomplete:
        code = ExitCode.INCOMPLETE
    elif not passed:
        code = ExitCode.GATE_FAILED
    else:
        code = ExitCode.OK
    return GateVerdict(
        passed=passed,
        incomplete=incomplete,
        exit_code=int(code),
        reasons=reasons,
        questions=len(questions),
        errored=len(errored),
        degraded=len(degraded),
        mean_composite=mean_composite,
        mean_objective=mean_objective,
        must_pass_failures=len(must),
        critical_failures=len(critical),
        required_check_failures=len(required),
        reviews=len(reviews),
        max_errored=gate.max_errored,
        pass_rate=rate,
        unscored=[
            f"{q.question_id}#{q.trial}" if q.trial else q.question_id
            for q in questions
            if is_unscored(q)
        ],
        rule=describe_gate(gate),
        failed_questions=failed,
    )
