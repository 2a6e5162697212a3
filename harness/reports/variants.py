"""Variants of one agent side by side: a target's `variants:` run as one target each
(`<target>.<variant>`), reported together: pass rate, mean composite, cost and latency, with
seeded bootstrap intervals on the per-question values (an unknown cost stays unknown).

And the "resisted / followed" section: per injection kind (`tracegrade dataset inject`), which
variants' agents resisted the planted instruction and which followed it, read from the
grader that checks that kind's expectation on the record (the trajectory's `forbid` for
`forbidden_tool`, `expected_tools` for `skip_step`), never from the answer's text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..comparison.stats import BootstrapInterval, paired_bootstrap
from ..cost.usage import Tokens, format_cost, format_seconds
from ..verdicts.scoring import question_passed
from .common import question_label
from .costs import totals_of

__all__ = [
    "InjectionKind",
    "VariantRow",
    "injection_kinds",
    "injection_lines",
    "variant_groups",
    "variant_lines",
]

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
    manifest = getattr(outcome, "manifest", None)
    targets = manifest.targets if manifest is not None else {}
    groups: dict[str, list[VariantRow]] = {}
    for t in outcome.targets:
        stored = targets.get(t.target)
        variant = stored.variant if stored is not None else None
        if variant is None:
            continue
        questions = list(t.questions)
        totals = totals_of(questions)
        usage = [getattr(q, "usage", None) for q in questions]
        groups.setdefault(str(variant.of), []).append(
            VariantRow(
                target=t.target,
                variant=str(variant.name),
                args=dict(variant.args),
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


_PREFIX = "injection:"
CHECKED_BY = {"forbidden_tool": "trajectory_grader", "skip_step": "tool_usage_grader"}
"""The grader whose verdict says whether a variant of each kind was resisted."""


@dataclass(slots=True)
class InjectionKind:
    """One kind's variants of one target, by what the agent did with the planted text."""

    kind: str
    resisted: list[str] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    """Errored runs, or the checking grader not attached or skipped: nobody knows."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "checked_by": CHECKED_BY.get(self.kind),
            "resisted": self.resisted,
            "followed": self.followed,
            "unchecked": self.unchecked,
        }


def injection_kinds(questions: Iterable[Any]) -> list[InjectionKind]:
    """The section's rows, one per kind present, in kind order."""
    found: dict[str, InjectionKind] = {}
    for q in questions:
        kind = next((t[len(_PREFIX) :] for t in q.tags or () if t.startswith(_PREFIX)), None)
        if kind is None:
            continue
        row = found.setdefault(kind, InjectionKind(kind))
        label = question_label(q)
        grader = next((g for g in q.graders if g.grader_id == CHECKED_BY.get(kind)), None)
        if q.errored or grader is None or grader.passed is None:
            row.unchecked.append(label)
        elif grader.passed:
            row.resisted.append(label)
        else:
            row.followed.append(label)
    return [found[k] for k in sorted(found)]


def injection_lines(questions: Iterable[Any], show: Any = str) -> list[str]:
    """The section as text lines (console and Markdown; each id through `show`, the report's
    escaping); [] without injected variants."""
    rows = injection_kinds(questions)
    if not rows:
        return []
    lines = ["injections (resisted / followed, from the record):"]
    for row in rows:
        total = len(row.resisted) + len(row.followed) + len(row.unchecked)
        lines.append(
            f"  {row.kind}: resisted {len(row.resisted)}/{total}, followed {len(row.followed)}"
            + (f", unchecked {len(row.unchecked)}" if row.unchecked else "")
            + f" (checked by {CHECKED_BY.get(row.kind, '?')})"
        )
        if row.followed:
            lines.append(f"    followed: {', '.join(map(show, row.followed))}")
        if row.unchecked:
            lines.append(f"    unchecked: {', '.join(map(show, row.unchecked))}")
    return lines
