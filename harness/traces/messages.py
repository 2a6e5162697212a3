"""A graph's messages as OpenTelemetry instrumentations write them into `input.value` and
`output.value`, read in every shape into (role, text): role/content dicts (OpenAI style, as
LangGraph's docs pass them), LangChain messages dumped as `{"type", "data"}` (OpenInference's
encoder) or serialised as `{"lc", "id", "kwargs"}`, `{"type", "content"}` dicts and (role,
text) pairs. Roles are "user" and "assistant" whatever the shape called them."""

from __future__ import annotations

from typing import Any

from .spans import json_loads

__all__ = ["state_messages"]


_ROLES = {
    "user": "user",
    "human": "user",
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
}


def state_messages(raw: Any) -> list[tuple[str, str]] | None:
    """(role, text) of each message of a graph's input or output (`{"messages": [...]}` or a
    bare list), whatever shape each message was written in: a role/content dict, a LangChain
    message dumped as `{"type", "data"}` or serialised as `{"lc", "id", "kwargs"}`, a
    `{"type", "content"}` dict, a (role, text) pair. None when it holds no message list."""
    try:
        value = json_loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return None
    messages = value.get("messages") if isinstance(value, dict) else value
    if not isinstance(messages, list):
        return None
    out = []
    for m in messages:
        role, content = None, None
        if isinstance(m, list | tuple) and len(m) == 2 and isinstance(m[0], str):
            role, content = m
        elif isinstance(m, dict) and m.get("lc") == 1 and isinstance(m.get("id"), list):
            kwargs = m.get("kwargs")
            role = str(m["id"][-1])
            content = kwargs.get("content") if isinstance(kwargs, dict) else None
        elif isinstance(m, dict) and isinstance(m.get("data"), dict):
            role, content = m.get("type"), m["data"].get("content")
        elif isinstance(m, dict):
            role, content = m.get("role", m.get("type")), m.get("content")
        out.append((_ROLES.get(str(role), str(role)), _content_text(content)))
    return out


def _content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text") or "")
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") == "text")
        )
    return "" if content is None else str(content)
