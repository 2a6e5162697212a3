"""`assert_tool_calls`: tool_usage_grader's and trajectory_grader's verdicts as a test assertion,
for unit tests of agents.

```python
record = capture(graph, "Please book a consultation for ana@example.com ...")
assert_tool_calls(record, [
    {"tool": "lookup_customer", "should_run": True, "args": {"email": "ana@example.com"}},
    {"tool": "book_appointment", "should_run": True, "after": "lookup_customer"},
])
```

The expectations are a dataset's `expected_tools` and are judged by `tool_usage_grader` itself,
so a test and a run agree to the message. `trajectory=` takes a dataset's `trajectory` block
(match mode, argument matchers, forbid, only, count, max_calls), judged by `trajectory_grader`;
either or both may be given. On failure the `AssertionError` lists each expectation or
constraint as met or unmet (with the grader's reason), then the calls the record holds, numbered
`#1...` in the order they were requested (the numbers a trajectory reason names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .graders.tool_usage import ToolUsageGrader
from .graders.trajectory.grader import TrajectoryGrader, request_order
from .records import GradeResult, ToolCall, ToolRecord

__all__ = ["assert_tool_calls"]


def _call_line(number: int, call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    where = f"{call.agent}:" if call.agent and call.depth else ""
    return f"#{number} {where}{call.name}({args}) -> {call.outcome.value}"


def _failure(what: str, result: GradeResult, items: str, label: str) -> list[str]:
    """The lines of one grader's failure ([] when it passed): its reason, then each item of
    `details[items]` as ok or FAIL (a FAIL's `why` starts with the item itself)."""
    if result.score is not None and result.score >= result.max_score:
        return []
    lines = [f"tool calls {what}: {result.reason}", ""]
    for item in result.details.get(items, []):
        lines.append(f"  ok   {item[label]}" if item["met"] else f"  FAIL {item['why']}")
    return [*lines, ""]


def assert_tool_calls(
    record: ToolRecord | Sequence[ToolCall],
    expected_tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    trajectory: Mapping[str, Any] | None = None,
) -> None:
    """Fail unless every expectation holds on `record`, as the graders judge it.

    `expected_tools` has the dataset format's `expected_tools` shape:
    `{tool, should_run, args?, after?}` each, judged by `tool_usage_grader`. `trajectory` has
    the dataset format's `trajectory` shape, judged by `trajectory_grader` (it holds only when
    every constraint does). Give either or both. An incomplete record fails (it is not
    evidence), as does a malformed expectation or trajectory.
    """
    if expected_tools is None and trajectory is None:
        raise TypeError("assert_tool_calls needs expected_tools, trajectory=, or both")
    if not isinstance(record, ToolRecord):
        record = ToolRecord(list(record))
    lines: list[str] = []
    if expected_tools is not None:
        context: dict[str, Any] = {
            "expected_tools": [dict(e) for e in expected_tools],
            "tool_calls": record,
        }
        result = ToolUsageGrader().grade("", "", context)
        lines += _failure("do not meet the expectations", result, "expectations", "expectation")
    if trajectory is not None:
        context = {"trajectory": trajectory, "tool_calls": record}
        result = TrajectoryGrader().grade("", "", context)
        lines += _failure("do not match the trajectory", result, "constraints", "constraint")
    if not lines:
        return
    lines.append(f"the record holds {len(record)} call(s):")
    ordered = request_order(record)
    lines += [f"  {_call_line(n, c)}" for n, c in enumerate(ordered, 1)] or ["  (none)"]
    raise AssertionError("\n".join(lines))
