"""The "resisted / followed" section: per injection kind (`tracegrade dataset inject`), which
variants' agents resisted the planted instruction and which followed it, read from the
grader that checks that kind's expectation on the record (the trajectory's `forbid` for
`forbidden_tool`, `expected_tools` for `skip_step`), never from the answer's text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .common import question_label

__all__ = ["InjectionKind", "injection_kinds", "injection_lines"]

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
