"""What the candidate costs beside the baseline: the agent's cost, tokens and latency, per run
and per question, with a paired bootstrap interval on each (the composite's, from
`tracegrade.comparison.stats`), and the `--fail-on cost:+20%` / `latency:+20%` rules.

Figures cover the questions both runs have (a question's trials averaged). Cost and tokens are
the agent's model calls (the judges' are reported beside, never compared); latency is a
question run's wall time. A figure that is unknown in either run (an unpriced model, calls
without usage, a run from an older release) is said to be unknown; a `--fail-on` rule on it
cannot be held and counts as a regression, never as a pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cost.usage import UNPRICED, format_cost, format_seconds
from ..errors import InputError
from ..rundir.record import QuestionResult
from .stats import BootstrapInterval, paired_bootstrap

__all__ = [
    "FIGURES",
    "THRESHOLD_RULE",
    "CostComparison",
    "FigureDelta",
    "QuestionCost",
    "compare_costs",
    "parse_thresholds",
]

FIGURES = ("cost", "tokens", "latency")
THRESHOLD_RULE = re.compile(r"^(cost|tokens|latency):\+(\d+(?:\.\d+)?)%$")
"""`cost:+20%`: a relative increase of the candidate over the baseline that is a regression."""


def parse_thresholds(rules: Sequence[str]) -> dict[str, float]:
    """The `FIGURE:+N%` rules of `--fail-on` as figure -> allowed relative increase (0.2);
    a rule that names a figure but is not of that form is invalid input (exit 4)."""
    out: dict[str, float] = {}
    for rule in rules:
        head = rule.split(":", 1)[0]
        if head not in FIGURES:
            continue
        match = THRESHOLD_RULE.match(rule.replace(" ", ""))
        if match is None:
            raise InputError(
                f"--fail-on {rule!r}: a malformed percentage",
                key="--fail-on",
                hint=f"write the allowed increase over the baseline, e.g. {head}:+20%",
            )
        out[match.group(1)] = float(match.group(2)) / 100
    return out


@dataclass(frozen=True, slots=True)
class QuestionCost:
    """One aligned question's figures in both runs (means over trials; None: unknown)."""

    target: str
    question_id: str
    base: dict[str, float | None]
    cand: dict[str, float | None]

    def delta(self, figure: str) -> float | None:
        b, c = self.base.get(figure), self.cand.get(figure)
        return None if b is None or c is None else c - b

    def relative(self, figure: str) -> float | None:
        return _relative(self.base.get(figure), self.cand.get(figure))


def _relative(base: float | None, cand: float | None) -> float | None:
    if base is None or cand is None:
        return None
    if base == 0:
        return 0.0 if cand == 0 else math.inf
    return cand / base - 1


@dataclass(frozen=True, slots=True)
class FigureDelta:
    """One figure over the aligned questions: the runs' totals (latency: mean seconds per
    question), the relative change and the interval on the mean per-question delta."""

    figure: str
    base: float | None
    cand: float | None
    interval: BootstrapInterval | None
    unknown: str | None = None
    """Why the figure is unknown (e.g. "unpriced in the candidate: m"), None when known."""

    @property
    def relative(self) -> float | None:
        return _relative(self.base, self.cand)


@dataclass(slots=True)
class CostComparison:
    figures: dict[str, FigureDelta]
    questions: list[QuestionCost]
    thresholds: dict[str, float] = field(default_factory=dict)
    currency: str = "USD"

    @property
    def available(self) -> bool:
        """Either run recorded an accounting (runs from older releases have none)."""
        return any(f.base is not None or f.cand is not None for f in self.figures.values()) or any(
            f.unknown for f in self.figures.values()
        )

    def most_changed(self, figure: str, n: int = 5) -> list[QuestionCost]:
        """The questions whose `figure` moved most (by absolute delta), largest first."""
        moved = [q for q in self.questions if q.delta(figure)]
        return sorted(moved, key=lambda q: -abs(q.delta(figure) or 0.0))[:n]

    @property
    def regressions(self) -> list[str]:
        """Why the candidate breaks a `--fail-on FIGURE:+N%` rule, naming the questions."""
        out = []
        for figure, allowed in self.thresholds.items():
            f = self.figures[figure]
            rule = f"{figure}:+{allowed * 100:g}%"
            if f.unknown or f.relative is None:
                out.append(
                    f"{figure} unknown ({f.unknown or 'not recorded'}): --fail-on {rule} cannot be held"
                )
                continue
            if f.relative <= allowed:
                continue
            over = [
                q
                for q in self.most_changed(figure, n=len(self.questions))
                if (q.relative(figure) or 0.0) > allowed
            ]
            names = ", ".join(
                f"{q.question_id} ({self.show(figure, q.base.get(figure))} -> "
                f"{self.show(figure, q.cand.get(figure))}, {_percent(q.relative(figure))})"
                for q in over[:10]
            )
            more = f" and {len(over) - 10} more" if len(over) > 10 else ""
            out.append(
                f"{figure} {_percent(f.relative)} over the baseline "
                f"({self.show(figure, f.base)} -> {self.show(figure, f.cand)}; allowed {rule})"
                + (f": {len(over)} question(s) over it: {names}{more}" if over else "")
            )
        return out

    def show(self, figure: str, value: float | None) -> str:
        if value is None:
            return "unknown"
        if figure == "cost":
            return format_cost(_money(value, self.currency))
        if figure == "tokens":
            return f"{value:,.0f}"
        return format_seconds(value)


def _money(value: float, currency: str):  # a Tokens only to format the amount alike
    from ..cost.usage import Tokens

    return Tokens(cost=value, currency=currency)


def _percent(value: float | None) -> str:
    if value is None:
        return "?"
    if math.isinf(value):
        return "+inf%"
    return f"{value * 100:+.0f}%"


def _figures(trials: Sequence[QuestionResult]) -> tuple[dict[str, float | None], dict[str, str]]:
    """A question's mean cost, tokens and wall seconds over its trials, and why a figure is
    unknown (by figure)."""
    usages = [t.usage for t in trials]
    if not usages or any(u is None for u in usages):
        why = "no accounting recorded (a run from an older release)"
        return dict.fromkeys(FIGURES), {"cost": why, "tokens": why}
    got = [u for u in usages if u is not None]
    unpriced = sorted({m for u in got for m in u.agent.unpriced})
    costs = [u.agent.cost for u in got]
    tokens = [u.agent.total_tokens if not u.agent.unknown_calls else None for u in got]
    unknown: dict[str, str] = {}
    if any(t is None for t in tokens):
        unknown["tokens"] = unknown["cost"] = "model calls without usage"
    if unpriced:
        unknown["cost"] = f"{UNPRICED}: {', '.join(unpriced)}"
    return (
        {
            "cost": _mean_or_none(costs),
            "tokens": _mean_or_none(tokens),
            "latency": math.fsum(u.latency.wall_s for u in got) / len(got),
        },
        unknown,
    )


def _mean_or_none(values: Sequence[float | int | None]) -> float | None:
    if any(v is None for v in values) or not values:
        return None
    return math.fsum(float(v) for v in values if v is not None) / len(values)


def compare_costs(
    pairs: Sequence[tuple[str, Sequence[QuestionResult], Sequence[QuestionResult]]],
    *,
    thresholds: dict[str, float],
    resamples: int,
    seed: int,
) -> CostComparison:
    """The figures of the aligned questions `pairs` ((target, baseline trials, candidate
    trials)), with `thresholds` from `parse_thresholds`."""
    questions: list[QuestionCost] = []
    unknown: dict[str, dict[str, dict[str, str]]] = {
        side: {f: {} for f in FIGURES} for side in ("base", "cand")
    }
    currency = "USD"
    for target, base, cand in pairs:
        b, b_why = _figures(base)
        c, c_why = _figures(cand)
        for side, whys, trials in (("base", b_why, base), ("cand", c_why, cand)):
            for figure, why in whys.items():
                unknown[side][figure].setdefault(why, trials[0].id)
        currency = next(
            (t.usage.agent.currency for t in cand if t.usage and t.usage.agent.currency), currency
        )
        questions.append(QuestionCost(target, cand[0].id if cand else base[0].id, b, c))
    figures = {}
    for figure in FIGURES:
        parts = [
            f"{why} in the {'baseline' if side == 'base' else 'candidate'}"
            for side in ("base", "cand")
            for why in unknown[side][figure]
        ]
        reason = "; ".join(parts) or None
        fold = _mean_or_none if figure == "latency" else _sum_or_none
        base_total = fold([q.base[figure] for q in questions])
        cand_total = fold([q.cand[figure] for q in questions])
        deltas = [d for q in questions if (d := q.delta(figure)) is not None]
        figures[figure] = FigureDelta(
            figure=figure,
            base=base_total,
            cand=cand_total,
            interval=paired_bootstrap(deltas, resamples=resamples, seed=seed) if deltas else None,
            unknown=reason,
        )
    return CostComparison(figures, questions, dict(thresholds), currency)


def _sum_or_none(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return math.fsum(v for v in values if v is not None)
