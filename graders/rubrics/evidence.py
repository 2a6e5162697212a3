"""Evidence for judge-kind checks, gathered from the grader context, and its rendering.

`policy` comes from the question's `metadata.policy`, else the grader's `policy_text`/`policy_file`
option, else the target's `policy:` file (the context's `policy` key); `context` from
`metadata.context`; `toolEvents` from the tool-call record, `messages` from the input. Tool results
are kept for code rules only: `render_evidence` never shows them to the judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...judging.rendering import escape_fences
from ...records import ToolCall, ToolRecord
from ...redaction import DEFAULT_POLICY, RedactionPolicy, truncate

__all__ = ["Evidence", "ToolEvent", "escape_fence", "gather_evidence", "render_evidence"]

ARG_CHARS = 200
"""Per-argument cut in the judge rendering (seed 000's rule for tool arguments)."""
MAX_EVENTS = 40


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call as rubric checks see it."""

    id: str
    """The model's call id, else `seq-<n>`: the id results cite."""
    name: str
    qualified_id: str
    arguments: Mapping[str, Any]
    outcome: str
    """`ok`, `error`, `not_executed`... (tracegrade.records.Outcome values)."""
    result: Any = None
    """Read by code (`successWhen`); never rendered for the judge."""

    def matches(self, name: str) -> bool:
        if ":" in name:
            return self.qualified_id == name
        return self.name == name or self.qualified_id == name


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a question offers the rubric judge; None means the field is absent."""

    policy: str | None = None
    context: str | None = None
    tool_events: tuple[ToolEvent, ...] | None = None
    """None when no usable record exists (chat mode, capture incomplete); () when empty."""
    messages: tuple[dict[str, str], ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    record_note: str | None = None
    """Why the tool record is unusable, when one existed but was incomplete."""

    def has(self, name: str) -> bool:
        value = {
            "policy": self.policy,
            "context": self.context,
            "toolEvents": self.tool_events,
            "messages": self.messages,
        }[name]
        return value is not None and (name == "toolEvents" or bool(value))

    def last_event(self, tool_name: str) -> ToolEvent | None:
        """The last event (in start order) named `tool_name`."""
        matching = [e for e in self.tool_events or () if e.matches(tool_name)]
        return matching[-1] if matching else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _event(item: Any, position: int) -> ToolEvent:
    if isinstance(item, ToolCall):
        return ToolEvent(
            id=item.call_id or f"seq-{item.seq}",
            name=item.name,
            qualified_id=item.qualified_id,
            arguments=dict(item.arguments),
            outcome=str(item.outcome),
            result=item.result,
        )
    # A plain mapping (a record read back from JSON): the same fields under their names.
    name = item.get("name") or item.get("function_name") or ""
    call_id = item.get("call_id") or item.get("id")
    return ToolEvent(
        id=str(call_id) if call_id else f"seq-{item.get('seq', position)}",
        name=name,
        qualified_id=item.get("qualified_id") or item.get("plugin_id") or name,
        arguments=dict(item.get("arguments") or {}),
        outcome=str(item.get("outcome", "ok")),
        result=item.get("result"),
    )


def gather_evidence(context: Mapping[str, Any], *, policy_text: str | None = None) -> Evidence:
    """Evidence from a grader context: the question's metadata first, then grader options, then
    the target's policy file."""
    metadata = context.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        metadata = {}
    policy = _text(metadata.get("policy")) or policy_text or _text(context.get("policy"))
    tool_events: tuple[ToolEvent, ...] | None = None
    note = None
    if "tool_calls" in context and context["tool_calls"] is not None:
        record = context["tool_calls"]
        if isinstance(record, ToolRecord) and not record.complete:
            # An incomplete record is never evidence (DESIGN.md): treat it as absent.
            note = "tool-call record incomplete: " + "; ".join(
                record.problems or ("capture failed",)
            )
        else:
            tool_events = tuple(_event(item, i) for i, item in enumerate(record))
    messages = context.get("messages")
    return Evidence(
        policy=policy,
        context=_text(metadata.get("context")),
        tool_events=tool_events,
        messages=tuple(messages) if messages else None,
        metadata=metadata,
        record_note=note,
    )


EVIDENCE_TAGS = ("policy", "reference_material", "tool_events", "messages", "assistant_response")
"""The rubric judge's fence tags."""


def escape_fence(text: str) -> str:
    """Neutralise every evidence fence tag in `text`, opening or closing, in any case or
    spacing (`< /assistant_response>`, `</ POLICY >`), as the six judges' fences do."""
    return escape_fences(text, EVIDENCE_TAGS)


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return repr(truncate(value, ARG_CHARS))
    if isinstance(value, bool | int | float) or value is None:
        return repr(value)
    return f"<{type(value).__name__}>"


def _render_events(events: Sequence[ToolEvent], policy: RedactionPolicy) -> str:
    lines = []
    for event in events[:MAX_EVENTS]:
        args = policy.arguments(event.arguments)
        rendered = ", ".join(f"{k}={_render_value(v)}" for k, v in args.items())
        status = "ran" if event.outcome == "ok" else event.outcome
        lines.append(f"- [{event.id}] {event.name}({rendered}) — {status}")
    if len(events) > MAX_EVENTS:
        lines.append(f"- ... and {len(events) - MAX_EVENTS} more call(s)")
    return "\n".join(lines) if lines else "(the agent called no tools)"


def render_evidence(
    evidence: Evidence,
    fields: Sequence[str],
    response: str,
    *,
    policy: RedactionPolicy = DEFAULT_POLICY,
) -> str:
    """The evidence block of the judge prompt: only `fields`, each in its own fence, then the
    response. Tool events show names, call ids and redacted arguments, never results; every
    part is redacted with `policy`."""
    parts = []
    if "policy" in fields and evidence.policy is not None:
        parts.append(f"<policy>\n{escape_fence(policy.text(evidence.policy))}\n</policy>")
    if "context" in fields and evidence.context is not None:
        body = escape_fence(policy.text(evidence.context))
        parts.append(f"<reference_material>\n{body}\n</reference_material>")
    if "toolEvents" in fields and evidence.tool_events is not None:
        body = escape_fence(policy.text(_render_events(evidence.tool_events, policy)))
        parts.append(f"<tool_events>\n{body}\n</tool_events>")
    if "messages" in fields and evidence.messages:
        lines = [f"{m.get('role', 'user')}: {m.get('content', '')}" for m in evidence.messages]
        body = escape_fence(policy.text(chr(10).join(lines)))
        parts.append(f"<messages>\n{body}\n</messages>")
    parts.append(f"<assistant_response>\n{escape_fence(response)}\n</assistant_response>")
    return "\n\n".join(parts)
