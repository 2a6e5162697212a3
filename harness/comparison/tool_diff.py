"""How one question's tool calls changed between two runs: calls added, removed, or made with
other arguments (`tracegrade compare` shows them under each changed question)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..rundir.record import ToolCallResult

__all__ = ["ToolCallChange", "diff_tool_calls"]


@dataclass(frozen=True, slots=True)
class ToolCallChange:
    """One difference between the baseline's and the candidate's calls to a question's tools."""

    kind: str
    """`appeared` (only the candidate made it), `disappeared` (only the baseline), `changed`."""
    name: str
    """The tool name."""
    args: dict[str, Any]
    """The call's arguments (the candidate's for appeared and changed, else the baseline's)."""
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """For `changed`: argument (or `outcome`) -> (baseline value, candidate value); a missing
    argument reads as None."""


def _diff_args(base: ToolCallResult, cand: ToolCallResult) -> dict[str, tuple[Any, Any]]:
    changed = {
        key: (base.args.get(key), cand.args.get(key))
        for key in sorted(set(base.args) | set(cand.args))
        if base.args.get(key, _MISSING) != cand.args.get(key, _MISSING)
    }
    if base.outcome != cand.outcome:
        changed["outcome"] = (base.outcome, cand.outcome)
    return changed


_MISSING = object()


def diff_tool_calls(
    base: Sequence[ToolCallResult], cand: Sequence[ToolCallResult]
) -> list[ToolCallChange]:
    """Calls paired by tool name in order of occurrence (the i-th call of a tool in one run
    with the i-th in the other): unpaired ones appeared or disappeared, paired ones with
    different arguments or outcome changed."""
    changes: list[ToolCallChange] = []
    names = list(dict.fromkeys([c.name for c in base] + [c.name for c in cand]))
    for name in names:
        b = [c for c in base if c.name == name]
        c = [x for x in cand if x.name == name]
        for before, after in zip(b, c, strict=False):
            diff = _diff_args(before, after)
            if diff:
                changes.append(ToolCallChange("changed", name, dict(after.args), diff))
        changes += [ToolCallChange("disappeared", name, dict(x.args)) for x in b[len(c) :]]
        changes += [ToolCallChange("appeared", name, dict(x.args)) for x in c[len(b) :]]
    return changes
