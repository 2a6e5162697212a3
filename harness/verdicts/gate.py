"""The gate: one target's question scores held against its `gate:` settings, and the exit code
of several verdicts combined (DESIGN.md's exit codes: 4 invalid input, 5 nothing to run,
3 incomplete, 2 gate failed, 0). The question scores themselves are `tracegrade.verdicts.scoring`;
the one verdict of a stored run is `tracegrade.rundir.verdict`."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ExitCode
from ..inputs.config import GateConfig
from .budgets import BudgetFold, budget_rule, question_budget_failures
from .result import QuestionResult
from .scoring import _fmt, _mean, all_passed, is_unscored, question_passed

__all__ = [
    "GateFold",
    "GateVerdict",
    "combine_exit_codes",
    "describe_gate",
    "evaluate_gate",
]


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
    questions: Iterable[QuestionResult],
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
    fold = GateFold(gate, must_pass=must_pass)
    for q in questions:
        fold.add(q)
    return fold.verdict(selected=selected, run_id=run_id)


def _label(q: QuestionResult) -> str:
    return f"{q.id}#{q.trial}" if q.trial else q.id


def _named(count: int, names: Sequence[str]) -> str:
    more = f" and {count - 5} more" if count > 5 else ""
    return f"{', '.join(names[:5])}{more}"


class GateFold:
    """`evaluate_gate` one question at a time, as a streamed run commits them: counts, sums
    and the first few names of each failure, never the questions (what stays is the labels of
    the failed and unscored questions, which the verdict lists)."""

    def __init__(self, gate: GateConfig, *, must_pass: Sequence[str] = ()) -> None:
        self.gate = gate
        self.must_pass = list(must_pass)
        self.budgets = BudgetFold(gate)
        self.questions = self.degraded = 0
        self.errored: list[str] = []
        self.errored_count = 0
        self.must_ran: list[str] = []
        self.must_errored: list[str] = []
        self.must_count = 0
        self.early: list[str] = []
        self.early_count = 0
        self.critical = self.required = self.reviews = 0
        self.composites = array("d")  # doubles, not float objects: 8 bytes a question
        self.objectives = array("d")
        self.trials: dict[tuple[str, str], bool | None] = {}
        self.failed: list[str] = []
        self.unscored: list[str] = []

    def add(self, q: QuestionResult) -> None:
        gate = self.gate
        q.over_budget = question_budget_failures(q.usage, gate)  # `apply_budgets`, in place
        self.budgets.add(q)
        self.questions += 1
        self.degraded += bool(q.degraded)
        if q.errored or not q.degraded:  # in the mean (an errored question as 0)
            if q.composite is not None:
                self.composites.append(q.composite)
            if q.objective is not None:
                self.objectives.append(q.objective)
        if q.errored:
            self.errored_count += 1
            if len(self.errored) < 5:
                self.errored.append(q.id)
            self.must_count += len(self.must_pass)
            for gid in self.must_pass:
                if len(self.must_errored) < 5:
                    self.must_errored.append(f"{q.id}: {gid}")
        else:
            for g in q.must_pass_failures:
                self.must_count += 1
                if len(self.must_ran) < 5:
                    self.must_ran.append(f"{q.id}: {g}")
            if q.ended_early:
                self.early_count += 1
                if len(self.early) < 5:
                    self.early.append(f"{q.id} ({q.outcome})")
            self.critical += len(q.critical_failures)
            self.required += len(q.required_check_failures)
            self.reviews += len(q.required_check_reviews)
            if is_unscored(q):
                self.unscored.append(_label(q))
        verdict = question_passed(q, critical_fails=gate.zero_critical_failures)
        key = (q.target, q.id)
        self.trials[key] = all_passed([self.trials.get(key, True), verdict])
        if verdict is False:
            self.failed.append(_label(q))

    def verdict(self, *, selected: int | None = None, run_id: str | None = None) -> GateVerdict:
        gate = self.gate
        reasons: list[str] = self.budgets.reasons()
        if self.must_count:
            names = (self.must_ran + self.must_errored)[:5]
            reasons.append(
                f"{self.must_count} must-pass failure(s) ({_named(self.must_count, names)})"
            )
        errored = self.errored_count
        if errored:
            reasons.append(
                f"{errored} errored question(s) ({_named(errored, self.errored)}): an errored "
                "question fails the gate"
            )
        if self.early_count:
            reasons.append(
                f"{self.early_count} question(s) ended before an answer "
                f"({_named(self.early_count, self.early)}): an unexpected interruption fails the gate"
            )
        if self.critical and gate.zero_critical_failures:
            reasons.append(f"{self.critical} critical rubric check failure(s)")
        if self.required:
            reasons.append(f"{self.required} required rubric check failure(s)")
        if self.reviews and not gate.allow_review:
            reasons.append(
                f"{self.reviews} required rubric check(s) left in Review (allow_review: false)"
            )
        mean_composite = _mean(self.composites)
        mean_objective = _mean(self.objectives)
        if gate.min_mean_composite is not None:
            if mean_composite is None:
                reasons.append("no question has a composite to hold against min_mean_composite")
            elif mean_composite < gate.min_mean_composite:
                reasons.append(
                    f"mean composite {mean_composite:.2f} < min_mean_composite {gate.min_mean_composite:g}"
                )
        decided = [v for v in self.trials.values() if v is not None]
        rate = sum(decided) / len(decided) if decided else None
        failed = self.failed
        if gate.min_pass_rate is not None and gate.min_pass_rate > 0:
            if rate is None:
                reasons.append("no question has a pass/fail verdict to hold against min_pass_rate")
            elif rate < gate.min_pass_rate:
                reasons.append(
                    f"pass rate {rate:.2f} < min_pass_rate {gate.min_pass_rate:g} "
                    f"(failed: {_named(len(failed), failed)})"
                )
        incomplete_reasons = []
        questions = self.questions
        if selected is not None and questions < selected:
            resume = f"tracegrade run --resume {run_id}" if run_id else "tracegrade run --resume"
            incomplete_reasons.append(
                f"evaluation incomplete: {selected - questions} of {selected} selected "
                f"question(s) have no result (the run was interrupted); finish with `{resume}`"
            )
        if self.degraded > gate.max_errored:
            incomplete_reasons.append(
                f"evaluation incomplete: {self.degraded} degraded/errored question(s) "
                f"({errored} agent error(s)) exceeds max_errored {gate.max_errored}"
            )
        # A required check waiting in Review holds the gate (above); it is not "nothing scored".
        if (
            (questions or selected)
            and not self.composites
            and not (self.reviews and not gate.allow_review)
        ):
            incomplete_reasons.append(
                f"evaluation incomplete: nothing was scored ({questions} question(s), "
                f"{self.degraded - errored} degraded, the rest skipped by every grader)"
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
            questions=questions,
            errored=errored,
            degraded=self.degraded,
            mean_composite=mean_composite,
            mean_objective=mean_objective,
            must_pass_failures=self.must_count,
            critical_failures=self.critical,
            required_check_failures=self.required,
            reviews=self.reviews,
            max_errored=gate.max_errored,
            pass_rate=rate,
            unscored=list(self.unscored),
            rule=describe_gate(gate),
            failed_questions=list(failed),
        )
