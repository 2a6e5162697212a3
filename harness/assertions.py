"""`assert_tool_calls`: tool_usage_grader's verdict as a test assertion, for unit tests of agents.

```python
record = capture(graph, "Please book a consultation for ana@example.com ...")
assert_tool_calls(record, [
    {"tool": "lookup_customer", "should_run": True, "args": {"email": "ana@example.com"}},
    {"tool": "book_appointment", "should_run": True, "after": "lookup_customer"},
])
```

The expectations are a dataset's `expected_tools` and are judged by `tool_usage_grader` itself,
so a test and a run agree to the message. On failure the `AssertionError` lists each
expectation as met or unmet (with the grader's reason), then the calls the record holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graders.tool_usage import ToolUsageGrader
from harness.records import ToolCall, ToolRecord

__all__ = ["assert_tool_calls"]


def _call_line(call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    where = f"{call.agent}:" if call.agent and call.depth else ""
    return f"{call.seq:>3}. {where}{call.name}({args}) -> {call.outcome.value}"


def assert_tool_calls(
    record: ToolRecord | Sequence[ToolCall], expected_tools: Sequence[Mapping[str, Any]]
) -> None:
    """Fail unless every expectation holds on `record`, as `tool_usage_grader` judges it.

    `expected_tools` has the dataset format's `expected_tools` shape:
    `{tool, should_run, args?, after?}` each. An incomplete record fails (it is not evidence),
    as does a malformed expectation.
    """
    if not isinstance(record, ToolRecord):
        record = ToolRecord(list(record))
    context = {"expected_tools": [dict(e) for e in expected_tools], "tool_calls": record}
    result = ToolUsageGrader().grade("", "", context)
    if result.score is not None and result.score >= result.max_score:
        return
    lines = [f"tool calls do not meet the expectations: {result.reason}", ""]
    for item in result.details.get("expectations", []):
        # the grader's `why` of an unmet expectation starts with the expectation itself
        lines.append(f"  ok   {item['expectation']}" if item["met"] else f"  FAIL {item['why']}")
    lines += ["", f"the record holds {len(record)} call(s):"]
    lines += [f"  {_call_line(c)}" for c in record] or ["  (none)"]
    raise AssertionError("\n".join(lines))
