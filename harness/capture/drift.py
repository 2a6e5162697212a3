"""What changed when a recording no longer fits: the nearest recording of a missed call and the
first difference between them, in words a person acts on (a system prompt's text diff, a tool
whose schema changed, a parameter that changed, a message that appeared).

Both sides are the requests as a cassette shows them (redacted with the run's policy)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..canonical import canonical_json
from .cassette import Recording

__all__ = ["describe_miss", "first_difference", "nearest"]

_DIFF_LINES = 12
_TEXT = 160


def describe_miss(
    *,
    label: str,
    position: int,
    path: Path,
    existed: bool,
    request: dict[str, Any],
    candidates: Sequence[Recording],
) -> str:
    """The error of a refused call: which question and call, and what changed."""
    head = f"replay miss: {label}, call #{position + 1}"
    if not existed:
        return (
            f"{head}: no cassette at {path} (record it with --record-mode once, or new to "
            "keep what fits)"
        )
    near = nearest(request, position, candidates)
    if near is None:
        return f"{head}: the cassette {path} holds no further recorded call (a call appeared)"
    return (
        f"{head} has no recording in {path}; nearest is recorded call #{near.call + 1}: "
        f"{first_difference(near.request, request)}"
    )


def nearest(
    request: dict[str, Any], position: int, candidates: Sequence[Recording]
) -> Recording | None:
    """The recording most like `request`: most equal parts (model, parameters, tools, tool
    choice, response format, each message), then the closest position."""
    if not candidates:
        return None

    def likeness(r: Recording) -> tuple[int, int]:
        return (_same_parts(r.request, request), -abs(r.call - position))

    return max(candidates, key=likeness)


def _same_parts(a: dict[str, Any], b: dict[str, Any]) -> int:
    same = sum(
        1
        for k in ("model", "params", "tools", "tool_choice", "response_format", "tool", "input")
        if a.get(k) == b.get(k)
    )
    old, new = a.get("messages") or [], b.get("messages") or []
    return same + sum(1 for x, y in zip(old, new, strict=False) if x == y)


def first_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The first thing that differs, recorded (`old`) against now (`new`)."""
    if "tool" in old or "tool" in new:
        if old.get("tool") != new.get("tool"):
            return f"tool {new.get('tool')!r} was called where {old.get('tool')!r} was recorded"
        return (
            f"tool {new.get('tool')!r} input changed: {_change(old.get('input'), new.get('input'))}"
        )
    if old.get("model") != new.get("model"):
        return f"the model changed: {_short(old.get('model'))} -> {_short(new.get('model'))}"
    found = _params(old.get("params") or {}, new.get("params") or {})
    if found:
        return found
    found = _tools(old.get("tools") or [], new.get("tools") or [])
    if found:
        return found
    for slot, words in (
        ("tool_choice", "the tool choice"),
        ("response_format", "the response format"),
    ):
        if old.get(slot) != new.get(slot):
            return f"{words} changed: {_change(old.get(slot), new.get(slot))}"
    return _messages(old.get("messages") or [], new.get("messages") or [])


def _params(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    for name in sorted(set(old) | set(new)):
        if name not in new:
            return f"parameter {name!r} was removed (recorded {_short(old[name])})"
        if name not in old:
            return f"parameter {name!r} appeared: {_short(new[name])}"
        if old[name] != new[name]:
            return f"parameter {name!r} changed: {_short(old[name])} -> {_short(new[name])}"
    return None


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        inner = tool.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else tool
        return str(fn.get("name") or fn.get("title") or canonical_json(tool)[:40])
    return str(tool)


def _tools(old: list[Any], new: list[Any]) -> str | None:
    before = {_tool_name(t): t for t in old}
    after = {_tool_name(t): t for t in new}
    for name in after:
        if name not in before:
            return f"tool {name!r} was bound (not in the recording)"
    for name in before:
        if name not in after:
            return f"tool {name!r} is no longer bound"
    for name, tool in after.items():
        if before[name] != tool:
            return f"tool {name!r}'s schema changed: {_change(before[name], tool)}"
    if list(before) != list(after):
        return f"the bound tools' order changed: {list(before)} -> {list(after)}"
    return None


def _role(message: dict[str, Any], index: int) -> str:
    role = message.get("role")
    if role == "system":
        return "the system prompt" if index == 0 else f"system message {index + 1}"
    return f"message {index + 1} ({role})"


def _messages(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> str:
    for i in range(max(len(old), len(new))):
        if i >= len(old):
            return f"a message appeared at {_role(new[i], i)}: {_text(new[i])}"
        if i >= len(new):
            return f"{_role(old[i], i)} disappeared (recorded {_text(old[i])})"
        a, b = old[i], new[i]
        if a == b:
            continue
        if a.get("role") != b.get("role"):
            return f"{_role(b, i)} was recorded as {a.get('role')}: {_text(b)}"
        if a.get("content") != b.get("content"):
            return f"{_role(b, i)} changed:\n{_text_diff(a.get('content'), b.get('content'))}"
        for slot in sorted(set(a) | set(b)):
            if a.get(slot) != b.get(slot):
                return f"{_role(b, i)}'s {slot} changed: {_change(a.get(slot), b.get(slot))}"
    return (
        "the request shows as recorded: it differs only in text the redaction policy hides, "
        "or it was made more often than recorded"
    )


def _as_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, indent=1, default=str)


def _text_diff(old: Any, new: Any) -> str:
    lines = list(
        difflib.unified_diff(
            _as_text(old).splitlines(),
            _as_text(new).splitlines(),
            "recorded",
            "now",
            n=1,
            lineterm="",
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join("    " + line for line in lines)


def _text(message: dict[str, Any]) -> str:
    text = _as_text(message.get("content"))
    if message.get("tool_calls"):
        text += f" tool calls {_short(message['tool_calls'])}"
    return repr(text if len(text) <= _TEXT else text[: _TEXT - 3] + "...")


def _short(value: Any) -> str:
    text = canonical_json(value)
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


def _change(old: Any, new: Any) -> str:
    """The first path where two JSON values part, with both sides."""
    path = _first_path(old, new, "")
    return f"at {path or '/'}: {_short(_at(old, path))} -> {_short(_at(new, path))}"


def _first_path(a: Any, b: Any, path: str) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k) != b.get(k):
                if k in a and k in b:
                    return _first_path(a[k], b[k], f"{path}/{k}")
                return f"{path}/{k}"
        return path
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_path(x, y, f"{path}/{i}")
    return path


def _at(value: Any, path: str) -> Any:
    for part in [p for p in path.split("/") if p]:
        if isinstance(value, dict):
            value = value.get(part, "(absent)")
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return "(absent)"
    return value
