"""Pure helpers of the capture layer, shared by the live recorder and the trace-file reader so
both build the same record from the same facts.

- `outcome_of_output` / `outcome_of_error`: an outcome from what the tool returned or raised,
  decided by types and statuses, never by message text.
- `genai_messages`: messages in the GenAI conventions' structured form (role and parts), for
  the `gen_ai.input.messages` / `gen_ai.output.messages` attributes of agent spans.
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

from ..otel import semconv
from ..records import Outcome

__all__ = [
    "encode_result",
    "genai_messages",
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
    kind = type(value)
    mapping = kind is dict
    # Exact types first: this runs at the end of every graph task, and the Mapping ABC check
    # cost more than the rest of a task's end.
    if not mapping and kind is not list:
        if isinstance(value, BaseMessage):
            return [value]
        if isinstance(value, Command):
            return messages_in(value.update)
        mapping = isinstance(value, Mapping)
        if not mapping and not isinstance(value, (list, tuple)):
            return []
    if mapping:
        found = value.get("messages")
        return messages_in(found) if found is not None else []
    out: list[BaseMessage] = []
    for item in value:
        if isinstance(item, BaseMessage):
            out.append(item)
        elif isinstance(item, (Command, Mapping)):
            out.extend(messages_in(item))
    return out


def requested_calls(messages: Iterable[BaseMessage]) -> dict[str, tuple[str, dict]]:
    """call id -> (name, args) for every tool call the AI messages requested."""
    out: dict[str, tuple[str, dict]] = {}
    for m in messages:
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                if call_id := tc.get("id"):
                    out[call_id] = (tc["name"], dict(tc.get("args") or {}))
    return out


_GENAI_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            parts.append({"type": "text", "content": block})
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append({"type": "text", "content": str(block.get("text", ""))})
    return parts


def genai_messages(value: Any, *, output: bool = False) -> list[dict[str, Any]]:
    """Messages (LangChain messages or role/content dicts, alone or in a state) in the GenAI
    semantic conventions' structured form: `{"role", "parts": [...]}` with text, `tool_call`
    and `tool_call_response` parts. `output=True`: only the last AI message, with its
    `finish_reason`."""
    if isinstance(value, Mapping) and "messages" in value:
        value = value["messages"]
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if output:
        items = [m for m in items if isinstance(m, AIMessage)][-1:]
    out = []
    for m in items:
        if isinstance(m, BaseMessage):
            role = _GENAI_ROLES.get(m.type, m.type)
            parts = _text_parts(m.content)
            if isinstance(m, AIMessage):
                parts += [
                    {
                        "type": "tool_call",
                        "id": tc.get("id"),
                        "name": tc["name"],
                        "arguments": plain(tc.get("args") or {}),
                    }
                    for tc in m.tool_calls
                ]
            elif isinstance(m, ToolMessage):
                parts = [
                    {
                        "type": "tool_call_response",
                        "id": m.tool_call_id,
                        "response": plain(m.content),
                    }
                ]
        elif isinstance(m, Mapping) and "role" in m:
            role = _GENAI_ROLES.get(str(m["role"]), str(m["role"]))
            parts = _text_parts(m.get("content", ""))
        elif isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str):  # ("user", "hi")
            role = _GENAI_ROLES.get(m[0], m[0])
            parts = _text_parts(m[1])
        else:
            continue
        message: dict[str, Any] = {"role": role, "parts": parts}
        if output:
            message["finish_reason"] = "tool_call" if m.tool_calls else "stop"
        out.append(message)
    return out
