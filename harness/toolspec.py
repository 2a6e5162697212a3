"""The tools an agent was offered: each tool's name, description and argument schema, as the
chat model was bound to them (`bind_tools`). Floor 1: plain data the recorder, the trace readers,
the record checks and the judges share.

Read from what the model was actually given (the `tools` of its invocation, in OpenAI's or
Anthropic's shape, or tool objects), never from the agent's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ToolSpec", "decode_specs", "encode_specs", "tool_spec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool a model of `agent` was offered."""

    name: str
    agent: str = ""
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    """The JSON Schema of its arguments, as declared; None when none was given."""


def tool_spec(raw: Any, agent: str) -> ToolSpec | None:
    """A ToolSpec from one entry of a model's bound `tools`: OpenAI's
    `{"type": "function", "function": {name, description, parameters}}`, Anthropic's
    `{name, description, input_schema}`, or a LangChain tool object. None when it has no name."""
    if isinstance(raw, Mapping):
        function = raw.get("function")
        inner: Mapping[str, Any] = function if isinstance(function, Mapping) else raw
        name = inner.get("name")
        schema = inner.get("parameters", inner.get("input_schema"))
        description = inner.get("description") or ""
    else:
        name = getattr(raw, "name", None)
        description = getattr(raw, "description", "") or ""
        schema = None
        args_schema = getattr(raw, "args_schema", None)
        if args_schema is not None:
            try:
                schema = (
                    args_schema
                    if isinstance(args_schema, Mapping)
                    else args_schema.model_json_schema()
                )
            except Exception:  # a schema the tool cannot render: known name, unknown arguments
                schema = None
    if not isinstance(name, str) or not name:
        return None
    return ToolSpec(
        name=name,
        agent=agent,
        description=str(description),
        parameters=dict(schema) if isinstance(schema, Mapping) else None,
    )


def encode_specs(specs: Iterable[ToolSpec]) -> str:
    """The offered tools as one JSON attribute value (the question span's `tracegrade.tools`)."""
    return json.dumps(
        [
            {"agent": s.agent, "name": s.name, "description": s.description}
            | ({"parameters": s.parameters} if s.parameters is not None else {})
            for s in specs
        ],
        ensure_ascii=False,
        default=str,
    )


def decode_specs(text: Any) -> tuple[ToolSpec, ...] | None:
    """`encode_specs` read back; None for anything that is not such a list."""
    try:
        rows = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    if not isinstance(rows, list):
        return None
    out = []
    for row in rows:
        if isinstance(row, Mapping) and isinstance(row.get("name"), str):
            params = row.get("parameters")
            out.append(
                ToolSpec(
                    name=row["name"],
                    agent=str(row.get("agent") or ""),
                    description=str(row.get("description") or ""),
                    parameters=params if isinstance(params, Mapping) else None,
                )
            )
    return tuple(out)
