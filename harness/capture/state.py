"""Per-run bookkeeping of the recorder: what it knows about each LangChain run and each tool
call, the attributes of an `execute_tool` span, and the frozen `ToolCall` a finished call
becomes. Plain state and pure functions; the callbacks and the lock live in `capture.py`."""

from __future__ import annotations

import json
import time
from typing import Any, cast

from opentelemetry.trace import Status, StatusCode

from ..graph_path import NodeRun, namespace_of
from ..otel import semconv as sc
from ..records import Interruption, Outcome, ToolCall
from .reconcile import encode_result

__all__ = [
    "ERROR_MESSAGE_CHARS",
    "AgentState",
    "InterruptState",
    "NodeState",
    "RunState",
    "ToolState",
    "finish_tool",
    "freeze",
    "tool_attributes",
]

ERROR_MESSAGE_CHARS = 200
"""What a raised tool error's message is cut to: in the span status and on the ToolCall alike,
so a re-grade from the trace file renders the same TOOL CALLS block as the run did."""


class AgentState:
    """A run LangGraph showed to be a graph: an agent, its depth and its span."""

    __slots__ = ("depth", "name", "span")

    def __init__(self, name: str, depth: int, span: Any) -> None:
        self.name = name
        self.depth = depth
        self.span = span


class RunState:
    """A LangChain run we know of: the agent it belongs to and the span its children hang under."""

    __slots__ = (
        "agent",
        "inputs",
        "is_agent",
        "is_task",
        "name",
        "node",
        "node_run",
        "parent_span",
        "span",
        "start_ns",
        "tool",
    )

    def __init__(
        self, name: str, agent: AgentState | None, parent_span: Any, inputs: Any = None
    ) -> None:
        self.name = name
        self.inputs = inputs  # a reference only: rendered if this run turns out to be an agent
        self.agent = agent
        self.parent_span = parent_span
        self.start_ns = time.time_ns()
        self.is_agent = False
        self.is_task = False
        self.node: str | None = None
        """The graph node (task) this run belongs to: its own name for a task."""
        self.node_run: NodeState | None = None
        """For a task: its entry in the path through the graph."""
        self.span: Any = None
        self.tool: ToolState | None = None


class ToolState:
    """A tool call in flight or finished, before it becomes a frozen ToolCall. Filled in field
    by field by the recorder (the declarations below are for the type checker)."""

    agent: str
    arguments: dict[str, Any]
    call_id: str | None
    depth: int
    end_ns: int
    world: str | None
    error_message: str | None
    error_type: str | None
    index_in_turn: int | None
    model_turn: int | None
    name: str
    node: str | None
    outcome: Outcome | None
    result: Any
    seq: int
    span: Any
    start_ns: int

    __slots__ = (
        "agent",
        "arguments",
        "call_id",
        "depth",
        "end_ns",
        "error_message",
        "error_type",
        "index_in_turn",
        "model_turn",
        "name",
        "node",
        "outcome",
        "result",
        "seq",
        "span",
        "start_ns",
        "world",
    )


class NodeState:
    """A graph node (task) in flight or finished, before it becomes a frozen NodeRun."""

    __slots__ = ("agent", "end_ns", "invocation", "name", "ns", "outcome", "start_ns")

    def __init__(
        self, name: str, metadata: Any, agent: AgentState | None, invocation: int, start_ns: int
    ) -> None:
        self.name = name
        self.ns = metadata  # the raw metadata: read only at seal, off the hot path
        self.agent = agent
        self.invocation = invocation
        self.start_ns = start_ns
        self.end_ns = 0
        self.outcome = "ok"

    def freeze(self, seq: int, top_agent: str) -> NodeRun:
        meta = self.ns if isinstance(self.ns, dict) else {}
        step = meta.get("langgraph_step")
        agent = self.agent
        return NodeRun(
            seq=seq,
            name=str(meta.get("langgraph_node") or self.name),
            namespace=namespace_of(meta.get("checkpoint_ns")),
            step=step if isinstance(step, int) else None,
            invocation=self.invocation,
            agent=agent.name if agent is not None else top_agent,
            depth=agent.depth if agent is not None else 0,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            outcome=self.outcome,
        )


def tool_attributes(tool: ToolState) -> dict[str, Any]:
    """The attributes an `execute_tool` span starts with."""
    arguments = json.dumps(tool.arguments, ensure_ascii=False, default=str)
    attributes = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: tool.name,
        sc.GEN_AI_TOOL_TYPE: "function",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        sc.OI_SPAN_KIND: sc.OI_KIND_TOOL,
        sc.OI_TOOL_NAME: tool.name,
        sc.OI_INPUT_VALUE: arguments,
        sc.OI_INPUT_MIME_TYPE: sc.MIME_JSON,
        sc.TG_AGENT: tool.agent,
        sc.TG_DEPTH: tool.depth,
        sc.TG_QUALIFIED_ID: f"{tool.agent}:{tool.name}",
        sc.TG_SEQ: tool.seq,
    }
    if tool.call_id:
        attributes[sc.GEN_AI_TOOL_CALL_ID] = tool.call_id
        attributes[sc.OI_TOOL_ID] = tool.call_id
        attributes[sc.OI_TOOL_CALL_ID] = tool.call_id
    if tool.node is not None:
        attributes[sc.TG_NODE] = tool.node
    if tool.model_turn is not None:
        attributes[sc.TG_MODEL_TURN] = tool.model_turn
        attributes[sc.TG_INDEX_IN_TURN] = tool.index_in_turn
    return attributes


def finish_tool(
    tool: ToolState,
    outcome: Outcome,
    error_type: str | None,
    result: Any,
    *,
    message: str = "",
    end_ns: int | None = None,
) -> None:
    """Record how a call ended and end its span."""
    tool.outcome = outcome
    tool.error_type = error_type
    tool.error_message = message[:ERROR_MESSAGE_CHARS] or None
    tool.result = result
    tool.end_ns = end_ns or time.time_ns()
    span = tool.span
    span.set_attribute(sc.TG_OUTCOME, outcome.value)
    if result is not None:
        text, encoding = encode_result(result)
        span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, text)
        span.set_attribute(sc.OI_OUTPUT_VALUE, text)
        span.set_attribute(sc.TG_RESULT_ENCODING, encoding)
    if outcome in (Outcome.ERROR, Outcome.NOT_EXECUTED, Outcome.CANCELLED):
        kind = error_type or outcome.value
        span.set_attribute(sc.ERROR_TYPE, kind)
        span.set_status(Status(StatusCode.ERROR, message[:ERROR_MESSAGE_CHARS] or kind))
    span.end(end_time=tool.end_ns)


def freeze(tool: ToolState) -> ToolCall:
    """The frozen ToolCall of a finished call."""
    ctx = tool.span.get_span_context()
    return ToolCall(
        seq=tool.seq,
        name=tool.name,
        qualified_id=f"{tool.agent}:{tool.name}",
        call_id=tool.call_id,
        arguments=tool.arguments,
        outcome=cast(Outcome, tool.outcome),  # frozen only once finished: set by finish_tool
        error_type=tool.error_type,
        error_message=getattr(tool, "error_message", None),
        result=tool.result,
        agent=tool.agent,
        depth=tool.depth,
        model_turn=tool.model_turn,
        index_in_turn=tool.index_in_turn,
        span_id=format(ctx.span_id, "016x"),
        trace_id=format(ctx.trace_id, "032x"),
        start_ns=tool.start_ns,
        end_ns=tool.end_ns,
        world=getattr(tool, "world", None),
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class InterruptState:
    """An interrupt raised during the run, open until it is answered or the question ends."""

    __slots__ = (
        "agent",
        "call_id",
        "depth",
        "end_ns",
        "interrupt_id",
        "node",
        "resume_value",
        "resumed",
        "seq",
        "span",
        "start_ns",
        "tool",
        "value",
    )

    def __init__(
        self,
        *,
        seq: int,
        value: Any,
        node: str,
        agent: str,
        depth: int,
        interrupt_id: str,
        tool: str | None,
        call_id: str | None,
    ) -> None:
        self.seq = seq
        self.value = value
        self.node = node
        self.agent = agent
        self.depth = depth
        self.interrupt_id = interrupt_id
        self.tool = tool
        self.call_id = call_id
        self.resumed = False
        self.resume_value: Any = None
        self.start_ns = time.time_ns()
        self.end_ns = 0
        self.span: Any = None

    def attributes(self) -> dict[str, Any]:
        payload = _json(self.value)
        attributes: dict[str, Any] = {
            sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN,
            sc.OI_INPUT_VALUE: payload,
            sc.OI_INPUT_MIME_TYPE: sc.MIME_JSON,
            sc.TG_INTERRUPT_VALUE: payload,
            sc.TG_INTERRUPT_ID: self.interrupt_id,
            sc.TG_INTERRUPT_NODE: self.node,
            sc.TG_INTERRUPT_SEQ: self.seq,
            sc.TG_AGENT: self.agent,
            sc.TG_DEPTH: self.depth,
        }
        if self.tool is not None:
            attributes[sc.TG_INTERRUPT_TOOL] = self.tool
        if self.call_id is not None:
            attributes[sc.TG_INTERRUPT_CALL_ID] = self.call_id
        return attributes

    def finish(self, *, resumed: bool, value: Any = None) -> None:
        """Answered (`resumed`) or left waiting when the question ended: the span ends."""
        self.resumed = resumed
        self.resume_value = value if resumed else None
        self.end_ns = time.time_ns()
        span = self.span
        span.set_attribute(sc.TG_INTERRUPT_RESUMED, resumed)
        if resumed:
            answer = _json(value)
            span.set_attribute(sc.TG_INTERRUPT_RESUME, answer)
            span.set_attribute(sc.OI_OUTPUT_VALUE, answer)
            span.set_attribute(sc.OI_OUTPUT_MIME_TYPE, sc.MIME_JSON)
        span.end(end_time=self.end_ns)

    def freeze(self) -> Interruption:
        ctx = self.span.get_span_context()
        return Interruption(
            seq=self.seq,
            value=self.value,
            node=self.node,
            agent=self.agent,
            depth=self.depth,
            interrupt_id=self.interrupt_id,
            tool=self.tool,
            call_id=self.call_id,
            resumed=self.resumed,
            resume_value=self.resume_value,
            span_id=format(ctx.span_id, "016x"),
            trace_id=format(ctx.trace_id, "032x"),
            start_ns=self.start_ns,
            end_ns=self.end_ns,
        )
