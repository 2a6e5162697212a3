"""The gate's budgets: what a question run may cost, how many tokens it may use, and how slow
the run may be (`max_cost`, `max_cost_per_question`, `max_tokens_per_question`,
`max_p95_latency_s`).

A budget holds the agent's model calls (what a team ships), not the judges'. A figure that is
not known cannot be held under a budget: an unpriced model or calls without usage fail it,
with the reason saying so (never counted as free).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..cost.usage import QuestionUsage, Tokens, TotalsFold, format_cost, format_over
from ..inputs.config import GateConfig

if TYPE_CHECKING:
    from .result import QuestionResult

__all__ = [
    "BudgetFold",
    "apply_budgets",
    "budget_rule",
    "question_budget_failures",
    "run_budget_reasons",
]


def _unknown_cost(tokens: Tokens) -> str:
    if tokens.unpriced:
        return f"cost unpriced (no price for {', '.join(tokens.unpriced)})"
    return f"cost unknown ({tokens.unknown_calls} model call(s) reported no usage)"


def _money(value: float, tokens: Tokens | None = None) -> str:
    return format_cost(Tokens(cost=value, currency=tokens.currency if tokens else "USD"))


def question_budget_failures(usage: QuestionUsage | None, gate: GateConfig) -> list[str]:
    """The per-question budgets `usage` exceeds, each naming the figure and the budget."""
    out: list[str] = []
    if not gate.budgets:
        return out
    if usage is None:
        return ["no cost or token accounting recorded for it (a run from an older release)"]
    if usage.unavailable:  # not applicable: said beside the run, never a silent pass
        return []
    agent = usage.agent
    if gate.max_cost_per_question is not None:
        limit = _money(gate.max_cost_per_question, agent)
        if agent.cost is None:
            out.append(f"{_unknown_cost(agent)}: max_cost_per_question {limit} cannot be held")
        elif agent.cost > gate.max_cost_per_question:
            shown, limit = format_over(agent, gate.max_cost_per_question)
            out.append(f"cost {shown} > max_cost_per_question {limit}")
    if gate.max_tokens_per_question is not None:
        tokens = agent.total_tokens
        if tokens is None or agent.unknown_calls:
            out.append(
                f"tokens unknown ({agent.unknown_calls} model call(s) reported no usage): "
                f"max_tokens_per_question {gate.max_tokens_per_question:,} cannot be held"
            )
        elif tokens > gate.max_tokens_per_question:
            out.append(
                f"tokens {tokens:,} > max_tokens_per_question {gate.max_tokens_per_question:,}"
            )
    return out


def apply_budgets(questions: Sequence[QuestionResult], gate: GateConfig) -> None:
    """Set each question's `over_budget` from its accounting and `gate` (in place;
    idempotent: a re-grade or `show` under another gate decides afresh)."""
    for q in questions:
        q.over_budget = question_budget_failures(q.usage, gate)


def run_budget_reasons(questions: Sequence[QuestionResult], gate: GateConfig) -> list[str]:
    """Why the run breaks its budgets (empty: it does not), per-question ones named."""
    fold = BudgetFold(gate)
    for q in questions:
        fold.add(q)
    return fold.reasons()


class BudgetFold:
    """`run_budget_reasons` one question at a time: the over-budget questions counted (the
    first five named), the accountings summed (`TotalsFold`), none of them kept."""

    def __init__(self, gate: GateConfig) -> None:
        self.gate = gate
        self.over = 0
        self.shown: list[str] = []
        self.totals = TotalsFold()

    def add(self, q: QuestionResult) -> None:
        """Count `q` (its `over_budget` already set: `apply_budgets`)."""
        if self.gate.max_cost is not None or self.gate.max_p95_latency_s is not None:
            self.totals.add(q.usage)  # only these budgets need the run's totals
        if not q.over_budget:
            return
        self.over += 1
        if len(self.shown) < 5:
            label = f"{q.id}#{q.trial}" if q.trial else q.id
            self.shown.append(f"{label}: {', '.join(q.over_budget)}")

    def reasons(self) -> list[str]:
        gate = self.gate
        reasons: list[str] = []
        if self.over:
            more = f" and {self.over - 5} more" if self.over > 5 else ""
            reasons.append(
                f"{self.over} question(s) over a per-question budget "
                f"({'; '.join(self.shown)}{more})"
            )
        if gate.max_cost is None and gate.max_p95_latency_s is None:
            return reasons
        totals = self.totals.totals()
        if gate.max_cost is not None:
            limit = _money(gate.max_cost, totals.agent)
            if self.totals.missing:
                reasons.append(f"run cost unknown (questions without accounting): max_cost {limit}")
            elif totals.cost is None:
                reasons.append(
                    f"run {_unknown_cost(totals.agent)}: max_cost {limit} cannot be held"
                )
            elif totals.cost > gate.max_cost:
                shown, limit = format_over(totals.agent, gate.max_cost)
                reasons.append(f"run cost {shown} > max_cost {limit}")
        if gate.max_p95_latency_s is not None:
            p95 = totals.wall_percentile(95)
            if p95 is not None and p95 > gate.max_p95_latency_s:
                reasons.append(
                    f"p95 question latency {_seconds_over(p95, gate.max_p95_latency_s)}s > "
                    f"max_p95_latency_s {gate.max_p95_latency_s:g}"
                )
        return reasons


def _seconds_over(value: float, limit: float) -> str:
    """`value` with as many decimals as show it above `limit` (`1.234` over `1.23`)."""
    digits = 2
    while digits < 9 and float(f"{value:.{digits}f}") <= limit:
        digits += 1
    return f"{value:.{digits}f}"


def budget_rule(gate: GateConfig) -> list[str]:
    """The budgets in force, in words, for the gate's description."""
    parts = []
    if gate.max_cost is not None:
        parts.append(f"run cost <= {_money(gate.max_cost)}")
    if gate.max_cost_per_question is not None:
        parts.append(f"cost per question <= {_money(gate.max_cost_per_question)}")
    if gate.max_tokens_per_question is not None:
        parts.append(f"tokens per question <= {gate.max_tokens_per_question:,}")
    if gate.max_p95_latency_s is not None:
        parts.append(f"p95 question latency <= {gate.max_p95_latency_s:g}s")
    return parts
