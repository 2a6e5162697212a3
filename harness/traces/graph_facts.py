"""What a trace says beyond the tool calls, in each dialect: the path through the graph (node
runs), the tools the agent's models were offered, when the final answer was given. tracegrade's
own spans carry them on the question span (`capture.tracefile.graph_facts`); OpenInference's
LangChain instrumentation carries LangGraph's callback metadata on every CHAIN span
(`langgraph_node`, `langgraph_step`, `checkpoint_ns`) and the bound tools on LLM spans
(`llm.tools.<i>.tool.json_schema`). Keyword arguments of `ToolRecord`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..capture.tracefile import graph_facts
from ..graph_path import NodeRun, namespace_of
from ..otel import semconv as sc
from ..toolspec import ToolSpec, tool_spec
from .spans import Span, json_loads

__all__ = ["openinference_facts", "question_span_facts"]

_OI_TOOL = re.compile(r"llm\.tools\.(\d+)\.tool\.json_schema$")
_OI_TOOL_CALLS = "message.tool_calls"
_ERROR = 2


def question_span_facts(spans: Sequence[Span]) -> dict[str, Any]:
    """tracegrade's own trace: the facts its question span carries."""
    for s in spans:
        if s.name == sc.SPAN_QUESTION:
            return graph_facts(s.attributes)
    return {}


def openinference_facts(
    spans: Sequence[Span],
    by_id: Mapping[str, Span],
    metadata: Callable[[Span], dict[str, Any]],
    agent_of: Callable[[Span], tuple[str, int]],
) -> dict[str, Any]:
    """The facts of an OpenInference trace of a LangGraph app."""
    ordered = sorted(spans, key=lambda s: s.start_ns)
    nodes: list[NodeRun] = []
    offered: dict[tuple[str, str], ToolSpec] = {}
    any_tools = False
    answer_ns = None
    for s in ordered:
        meta = metadata(s)
        kind = s.attributes.get(sc.OI_SPAN_KIND)
        if meta.get("langgraph_node") == s.name and not _wrapper(s, by_id, metadata):
            parent = by_id.get(s.parent_id)
            agent, depth = agent_of(parent) if parent is not None else ("", 0)
            step = meta.get("langgraph_step")
            nodes.append(
                NodeRun(
                    seq=len(nodes),
                    name=s.name,
                    namespace=namespace_of(meta.get("checkpoint_ns")),
                    step=step if isinstance(step, int) else None,
                    agent=agent,
                    depth=depth,
                    start_ns=s.start_ns,
                    end_ns=s.end_ns,
                    outcome=_outcome(s),
                )
            )
        if kind == sc.OI_KIND_LLM:
            agent, _ = agent_of(s)
            for key, value in s.attributes.items():
                if key.startswith("llm.tools.") and _OI_TOOL.match(key):  # the prefix first
                    any_tools = True
                    spec = (
                        _offered(value, agent)
                        if isinstance(value, str)
                        else tool_spec(_json(value), agent)
                    )
                    if spec is not None:
                        offered[(agent, spec.name)] = spec
            if not any(_OI_TOOL_CALLS in k for k in s.attributes if k.startswith("llm.output")):
                answer_ns = s.end_ns
    return {
        "nodes": tuple(nodes),
        "offered": tuple(offered.values()) if any_tools else None,
        "answer_ns": answer_ns,
    }


@functools.lru_cache(maxsize=256)
def _offered(schema: str, agent: str) -> ToolSpec | None:
    """A tool offered to `agent`, from its JSON schema attribute: an app offers the same tools
    in every trace, so each schema's text is read once (a third of reading an OpenInference
    trace's graph facts went to parsing the same schemas again). A ToolSpec is frozen."""
    return tool_spec(_json(schema), agent)


def _wrapper(span: Span, by_id: Mapping[str, Span], metadata: Callable[[Span], dict]) -> bool:
    """LangGraph wraps each node's runnable in a task of the same name: the inner one."""
    parent = by_id.get(span.parent_id)
    return (
        parent is not None
        and parent.name == span.name
        and metadata(parent).get("langgraph_node") == span.name
    )


def _outcome(span: Span) -> str:
    if span.status_code != _ERROR:
        return "ok"
    text = span.status_message or ""
    return "interrupted" if "Interrupt" in text else "error"


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json_loads(value)
    except ValueError:
        return None
