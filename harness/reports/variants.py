"""Variants of one agent side by side: a target's `variants:` run as one target each
(`<target>.<variant>`), reported together: pass rate, mean composite, cost and latency, with
seeded bootstrap intervals on the per-question values (an unknown cost stays unknown)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..comparison.stats import BootstrapInterval, paired_bootstrap
from ..usage import Tokens, format_cost, format_seconds
from ..verdicts.scoring import question_passed
from .costs import totals_of

__all__ = ["VariantRow", "variant_groups", "variant_lines"]

RESAMPLES = 2_000
"""Bootstrap resamples per interval (seed 0): enough for a report's 95% interval."""


@dataclass(slots=True)
class VariantRow:
    """One variant of a target, as the side-by-side table shows it."""

    target: str
    """The run's target name (`<target>.<variant>`)."""
    variant: str
    args: Mapping[str, Any]
    """The factory keyword arguments that make it this variant."""
    passed: bool
    """Its gate."""
    pass_rate: BootstrapInterval | None
    composite: BootstrapInterval | None
    latency_s: BootstrapInterval | None
    """Mean question wall time."""
    tokens: Tokens
    """The agent's tokens and cost over the variant's questions (`cost` None: unknown)."""

    def as_dict(self) -> dict[str, Any]:
        def interval(i: BootstrapInterval | None) -> dict[str, Any] | None:
            return i.as_dict() if i is not None else None

        return {
            "target": self.target,
            "variant": self.variant,
            "args": dict(self.args),
            "passed": self.passed,
            "pass_rate": interval(self.pass_rate),
            "composite": interval(self.composite),
            "latency_s": interval(self.latency_s),
            "cost": self.tokens.cost,
            "currency": self.tokens.currency,
        }


def _interval(values: Iterable[float | None]) -> BootstrapInterval | None:
    known = [v for v in values if v is not None]
    return paired_bootstrap(known, resamples=RESAMPLES, seed=0) if known else None


def _passed(question: Any) -> float | None:
    verdict = question_passed(question)
    return None if verdict is None else float(verdict)


def variant_groups(outcome: Any) -> dict[str, list[VariantRow]]:
    """Base target name -> its variants' rows, in run order; {} when no target has variants."""
    targets = (getattr(outcome, "identity", None) or {}).get("targets") or {}
    groups: dict[str, list[VariantRow]] = {}
    for t in outcome.targets:
        variant = (targets.get(t.target) or {}).get("variant")
        if not isinstance(variant, Mapping):
            continue
        questions = list(t.questions)
        totals = totals_of(questions)
        usage = [getattr(q, "usage", None) for q in questions]
        groups.setdefault(str(variant.get("of")), []).append(
            VariantRow(
                target=t.target,
                variant=str(variant.get("name")),
                args=dict(variant.get("args") or {}),
                passed=bool(t.verdict.passed) and not t.verdict.incomplete,
                pass_rate=_interval(_passed(q) for q in questions),
                composite=_interval(q.composite for q in questions),
                latency_s=_interval(u.latency.wall_s if u is not None else None for u in usage),
                tokens=totals.agent,
            )
        )
    return groups


def _fmt(i: BootstrapInterval | None, digits: int = 2, unit: Any = None) -> str:
    if i is None:
        return "-"
    show = unit or (lambda v: f"{v:.{digits}f}")
    return f"{show(i.mean)} [{show(i.low)}, {show(i.high)}]"


def variant_lines(outcome: Any) -> list[str]:
    """The side-by-side table as text lines (console; Markdown wraps the same rows)."""
    lines: list[str] = []
    for base, rows in variant_groups(outcome).items():
        lines.append(f"variants of {base} (mean [95% interval] over questions):")
        table = [["variant", "gate", "pass rate", "composite", "latency", "cost"]]
        for r in rows:
            table.append(
                [
                    r.variant,
                    "passed" if r.passed else "FAILED",
                    _fmt(r.pass_rate),
                    _fmt(r.composite),
                    _fmt(r.latency_s, unit=format_seconds),
                    format_cost(r.tokens),
                ]
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table
        ]
    return lines
