"""The grader context: the question row plus the reserved keys the runner adds (seed 001).

Reserved keys always win over same-named question keys. `tool_calls` is present only when a
record exists and `environment` only when the target declared one: a grader tells "the agent
called nothing" (an empty record) from "nobody knows" (no key) with `"tool_calls" in context`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ..records import RunRecord, ToolRecord

__all__ = ["DEFAULT_RESPONSE_CHAR_LIMIT", "RESERVED_KEYS", "build_context", "trial_of"]

DEFAULT_RESPONSE_CHAR_LIMIT = 4000
"""The response cap when neither the target nor the config sets one."""

RESERVED_KEYS = (
    "response_char_limit",
    "messages",
    "criteria",
    "tool_calls",
    "environment",
    "run_record",
    "workdir",
    "policy",
)
"""Keys the runner owns. `criteria` is only overridden when the runner passes merged criteria."""


def build_context(
    row: Mapping[str, Any],
    *,
    messages: Sequence[Mapping[str, Any]],
    response_char_limit: int | None = DEFAULT_RESPONSE_CHAR_LIMIT,
    criteria: str | None = None,
    tool_calls: ToolRecord | None = None,
    environment: Any = None,
    run_record: RunRecord | None = None,
    policy: str | None = None,
    workdir: Any = None,
) -> dict[str, Any]:
    """The context handed to every grader for one question.

    `row` is the question as authored (copied, so a grader cannot alter the dataset).
    `criteria` is the question's criteria after rubric text was appended; None keeps the row's.
    `tool_calls` is the sealed record, or None when no record exists: then the key is absent,
    even if the row carried one. Same for `environment` (the question's `Environment`) and
    `run_record` (the RunRecord, for `@grader` functions that read usage or latency), and
    `policy` (the text of the target's `policy:` file, evidence for rubric judge checks), and
    `workdir` (the question run's own directory, which the agent could write to).
    """
    if tool_calls is not None and not isinstance(tool_calls, ToolRecord):
        raise TypeError(f"tool_calls must be a ToolRecord or None, not {type(tool_calls)!r}")
    context: dict[str, Any] = {key: _copied(value) for key, value in row.items()}
    for key in ("tool_calls", "environment", "run_record", "policy", "workdir"):
        context.pop(key, None)
    context["response_char_limit"] = (
        DEFAULT_RESPONSE_CHAR_LIMIT if response_char_limit is None else int(response_char_limit)
    )
    context["messages"] = [dict(message) for message in messages]
    if criteria is not None:
        context["criteria"] = criteria
    if tool_calls is not None:
        context["tool_calls"] = tool_calls
    if environment is not None:
        context["environment"] = environment
    if run_record is not None:
        context["run_record"] = run_record
    if policy is not None:
        context["policy"] = policy
    if workdir is not None:
        context["workdir"] = workdir
    return context


_PLAIN = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A deep copy of the question row: its JSON-shaped parts copied by hand (a question is
    mostly dicts, lists and strings, and `copy.deepcopy`'s memo made it a tenth of the
    grading's CPU on the per-question path), anything else by `copy.deepcopy`."""
    if isinstance(value, _PLAIN):
        return value
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    if type(value) is list:
        return [_copied(v) for v in value]
    return copy.deepcopy(value)


def trial_of(context: Mapping[str, Any]) -> int:
    """The trial index of the question run being graded (0 without repeats). Judges offset
    their cache's sample index by it, so each trial is judged afresh, not served the first
    trial's cached answer."""
    return int(getattr(context.get("run_record"), "trial", 0) or 0)
