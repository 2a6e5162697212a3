"""Pure helpers of the capture layer, shared by the live recorder and the trace-file reader so
both build the same record from the same facts.

- `outcome_of_output` / `outcome_of_error`: an outcome from what the tool returned or raised,
  decided by types and statuses, never by message text.
- `plain`: a JSON-shaped copy of a tool result, so the in-process record and the record read
  back from the trace file are equal.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.errors import GraphInterrupt, ParentCommand
from langgraph.types import Command

from harness import semconv
from harness.records import Outcome

__all__ = [
    "encode_result",
    "messages_in",
    "outcome_of_error",
    "outcome_of_output",
    "plain",
    "requested_calls",
]

_CANCELLED_TYPES = (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt)


def outcome_of_output(output: Any) -> tuple[Outcome, str | None]:
    """Outcome and error type of a tool that returned `output`."""
    if isinstance(output, Command):
        return (Outcome.HANDOFF if output.graph == Command.PARENT else Outcome.COMMAND), None
    if isinstance(output, ToolMessage) and output.status == "error":
        return Outcome.ERROR, "ToolMessageError"
    return Outcome.OK, None


def outcome_of_error(error: BaseException) -> tuple[Outcome, str | None]:
    """Outcome and error type of a tool that raised `error`."""
    if isinstance(error, GraphInterrupt):
        return Outcome.INTERRUPTED, None
    if isinstance(error, ParentCommand):
        return Outcome.HANDOFF, None
    if isinstance(error, _CANCELLED_TYPES):
        return Outcome.CANCELLED, type(error).__name__
    return Outcome.ERROR, type(error).__name__


def plain(value: Any) -> Any:
    """A JSON-shaped copy of `value`: messages become their content, a Command its parts,
    anything unknown its `str()`."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, ToolMessage | BaseMessage):
        return plain(value.content)
    if isinstance(value, Command):
        parts = {"graph": value.graph, "goto": value.goto, "update": value.update}
        return {k: plain(v) for k, v in parts.items() if v not in (None, (), [], {})}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)


def encode_result(result: Any) -> tuple[str, str]:
    """(attribute text, encoding): a string result as is, anything else as JSON."""
    if isinstance(result, str):
        return result, semconv.RESULT_TEXT
    return json.dumps(result, ensure_ascii=False, default=str), semconv.RESULT_JSON


def messages_in(value: Any) -> list[BaseMessage]:
    """The messages in a node output or final state: a state dict, a list of messages or of
    Commands, a Command's update."""
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, Command):
        return messages_in(value.update)
    if isinstance(value, Mapping):
        found = value.get("messages")
        return messages_in(found) if found is not None else []
    if isinstance(value, (list, tuple)):
        out: list[BaseMessage] = []
        for item in value:
            if isinstance(item, BaseMessage):
                out.append(item)
            elif isinstance(item, (Command, Mapping)):
                out.extend(messages_in(item))
        return out
    return []


def requested_calls(messages: Iterable[BaseMessage]) -> dict[str, tuple[str, dict]]:
    """call id -> (name, args) for every tool call the AI messages requested."""
    out: dict[str, tuple[str, dict]] = {}
    for m in messages:
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                if tc.get("id"):
                    out[tc["id"]] = (tc["name"], dict(tc.get("args") or {}))
    return out
