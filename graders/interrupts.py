"""`interrupt_grader`: the interrupts a run paused on, checked against `expected_interrupts`.

An agent that must stop and ask a person (an approval before a refund, a question back to the
user) pauses on LangGraph's `interrupt()`; the tool-call record holds each one (`Interruption`:
payload, node, tool, position among the calls, the answer). The question says:

```yaml
expected_interrupts:
  count: 1                    # exactly; or {min: 1, max: 2}
  includes:                   # each matched by a different interrupt
    - payload: {question: {contains: refund}}   # payload key -> literal or matcher
      node: approval          # the node that raised it
      before: issue_refund    # no executed call of issue_refund started before it
      after: lookup_order     # lookup_order had run when it was asked
  ends_interrupted: false     # the conversation does (true) / does not end waiting on one
```

Score 0-1: the share of constraints met (the count, each `includes` entry, `ends_interrupted`).
Binary for the gate: it passes only at 1.0. Read from the record only, never from text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records import GradeResult, Interruption, ToolCall, ToolRecord
from .base import Grader, GraderServices
from .tool_usage import EXECUTED_OUTCOMES
from .trajectory.grader import record_in
from .trajectory.matchers import compile_args, shown
from .trajectory.matching import max_matching

__all__ = ["GRADERS", "InterruptGrader"]


def _times(n: int) -> str:
    return f"{n} interrupt" if n == 1 else f"{n} interrupts"


class _Expected:
    """One compiled `includes` entry."""

    def __init__(self, index: int, raw: Mapping[str, Any]) -> None:
        self.index = index
        self.raw = raw
        self.payload = compile_args(raw.get("payload"), "subset")

    @property
    def label(self) -> str:
        parts = [f"{k} {shown(v)}" for k, v in self.raw.items()]
        return f"includes[{self.index}] ({', '.join(parts)})"

    def differences(self, i: Interruption, calls: list[ToolCall]) -> list[str]:
        out = []
        if self.payload is not None:
            out += [f"payload {d}" for d in self.payload.explain(i.payload())]
        node = self.raw.get("node")
        if node is not None and i.node != node:
            out.append(f"node expected {node!r}, got {i.node!r}")
        tool = self.raw.get("tool")
        if tool is not None and not (i.tool == tool or f"{i.agent}:{i.tool}" == tool):
            out.append(f"tool expected {tool!r}, got {i.tool!r}")
        before = self.raw.get("before")
        if before is not None:
            early = [c for c in calls if c.matches(before) and c.start_ns < i.start_ns]
            if early:
                out.append(f"`{before}` had already run when it was asked")
        after = self.raw.get("after")
        if after is not None:
            done = [c for c in calls if c.matches(after) and 0 < c.end_ns <= i.start_ns]
            if not done:
                out.append(f"`{after}` had not run when it was asked")
        return out


class InterruptGrader(Grader):
    """Checks the interrupts the run paused on against the question's `expected_interrupts`."""

    id = "interrupt_grader"
    label = "Interrupts"
    description = (
        "Deterministic: did the run stop to ask where it should (how many interrupts, their "
        "payload and node, their order relative to tool calls, whether it ended waiting)? "
        "Read from the tool-call record; passes only when all hold."
    )
    observes_actions = True
    binary = True
    min_score = 0.0
    max_score = 1.0
    needs = "`expected_interrupts` (required, else skips)"
    owns = ("expected_interrupts",)
    evidence = ("interrupts",)

    def __init__(self, *, services: GraderServices | None = None) -> None:
        super().__init__(services=services)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        spec = context.get("expected_interrupts")
        if spec is None:
            return self.result(None, "no expected_interrupts in context, skipping")
        if not isinstance(spec, Mapping):
            return self.result(0.0, "setup failure: expected_interrupts must be a mapping")
        record = record_in(self, context, "interrupts are answered only from a tool-call record")
        if isinstance(record, GradeResult):
            return record
        return self._grade(spec, record)

    def _grade(self, spec: Mapping[str, Any], record: ToolRecord) -> GradeResult:
        found = list(record.interruptions)
        calls = [c for c in record if c.outcome in EXECUTED_OUTCOMES]
        checks: list[tuple[str, bool, str]] = []
        count = spec.get("count")
        if count is not None:
            low, high = (
                (count, count)
                if isinstance(count, int)
                else (
                    count.get("min"),
                    count.get("max"),
                )
            )
            ok = (low is None or len(found) >= low) and (high is None or len(found) <= high)
            wanted = (
                f"exactly {_times(count)}"
                if isinstance(count, int)
                else " and ".join(
                    f"{word} {n}"
                    for word, n in (("at least", low), ("at most", high))
                    if n is not None
                )
            )
            why = "" if ok else f"expected {wanted}, the run paused on {_times(len(found))}"
            checks.append((f"count {count}", ok, why))
        expected = [_Expected(i, raw) for i, raw in enumerate(spec.get("includes") or ())]
        edges = [[j for j, i in enumerate(found) if not e.differences(i, calls)] for e in expected]
        assign = max_matching(edges, len(found))
        for e, j in zip(expected, assign, strict=True):
            why = ""
            if j is None:
                if not found:
                    why = f"{e.label}: the run never stopped to ask"
                elif edges[e.index]:
                    why = f"{e.label}: the interrupt that fits is counted for another entry"
                else:
                    nearest = min(found, key=lambda i: len(e.differences(i, calls)))
                    why = f"{e.label}: nearest, {nearest.describe()}: " + "; ".join(
                        e.differences(nearest, calls)
                    )
            checks.append((e.label, j is not None, why))
        ends = spec.get("ends_interrupted")
        if ends is not None:
            pending = record.pending
            ok = bool(pending) == ends
            if ok:
                why = ""
            elif ends:
                why = "expected to end waiting on an interrupt, it ran to an answer"
            else:
                why = f"expected to run to an answer, it ended waiting: {pending[0].describe()}"
            checks.append((f"ends_interrupted {ends}", ok, why))
        met = sum(1 for _, ok, _ in checks if ok)
        total = len(checks)
        if met == total:
            reason = f"all {total} interrupt constraint(s) met ({_times(len(found))} in the record)"
        else:
            reason = f"{met} of {total} interrupt constraint(s) met; broken: " + "; ".join(
                why for _, ok, why in checks if not ok
            )
        details = {
            "source": "record",
            "interrupts": [
                {
                    "node": i.node,
                    "tool": i.tool,
                    "resumed": i.resumed,
                    "calls_before": i.calls_before,
                }
                for i in found
            ],
            "constraints": [{"constraint": c, "met": ok, "why": why} for c, ok, why in checks],
        }
        return self.result(met / total if total else 1.0, reason, details=details)


GRADERS: list[type[Grader]] = [InterruptGrader]
