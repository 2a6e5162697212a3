"""The model/tools loop both reference agents are built on, and small helpers for their scripts.

A named LangGraph graph: `StateGraph(MessagesState)` with an `agent` node calling the chat model
and a `ToolNode`, routed by `tools_condition` (the current replacement for the deprecated
`create_react_agent`). The model node has a sync and an async body, so `graph.ainvoke` never
parks a worker thread while the (scripted or real) model waits: tracegrade runs questions
concurrently on one event loop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel

__all__ = [
    "LATENCY_ENV",
    "build_tool_loop",
    "demo_latency",
    "last_tool_result",
    "model_node",
    "scripted_model",
    "tool_from",
]

LATENCY_ENV = "TRACEGRADE_DEMO_LATENCY"
"""Environment variable: seconds each scripted model call sleeps (e.g. `0.05`), default 0."""


def demo_latency(latency_s: float | None = None) -> float:
    """The scripted model's latency: the argument when given, else `$TRACEGRADE_DEMO_LATENCY`."""
    if latency_s is not None:
        return float(latency_s)
    raw = os.environ.get(LATENCY_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{LATENCY_ENV}={raw!r} is not a number of seconds") from exc
    if value < 0:
        raise ValueError(f"{LATENCY_ENV}={raw!r} must not be negative")
    return value


_schemas: dict[tuple[str, str], tuple[Any, str]] = {}
"""(module, qualified name) -> (argument schema, description), built once per tool function."""


def scripted_model(
    scripts: dict[str, dict[str, list]],
    script: str,
    *,
    latency_s: float | None,
    name: str,
    prompt_padding: int = 0,
) -> ScriptedChatModel:
    """The offline model replaying `scripts[script]`; latency from the argument or
    $TRACEGRADE_DEMO_LATENCY. It reports token usage measured from what it was sent and what
    it answered (`prompt_padding` more input tokens a call: a bloated prompt)."""
    if script not in scripts:
        raise ValueError(f"unknown script {script!r}; choose one of {sorted(scripts)}")
    return ScriptedChatModel(
        script=scripts[script],
        latency_s=demo_latency(latency_s),
        model_name=f"{name}-{script}",
        usage="measured",
        prompt_padding=prompt_padding,
    )


def tool_from(
    fn: Callable[..., Any],
    *,
    coroutine: Callable[..., Any] | None = None,
    name: str | None = None,
) -> BaseTool:
    """A tool with a sync body and an async twin (`coroutine`, or by default one calling `fn`
    inline: the tools here are microseconds of SQLite work, not worth a worker thread). Name,
    argument schema and description come from `fn`.

    The schema is inferred once per function and reused: the graphs here are built once per
    question (their tools close over that question's environment), and schema inference is
    the costliest part of building them.
    """
    if coroutine is None:

        async def coroutine(**kwargs: Any) -> Any:
            return fn(**kwargs)

    key = (fn.__module__, fn.__qualname__)
    if key not in _schemas:
        built = StructuredTool.from_function(func=fn, name=name or fn.__name__)
        _schemas[key] = (built.args_schema, built.description)
    schema, description = _schemas[key]
    return StructuredTool(
        name=name or fn.__name__,
        description=description,
        args_schema=schema,
        func=fn,
        coroutine=coroutine,
    )


def model_node(model: BaseChatModel, tools: Sequence[BaseTool]) -> RunnableLambda:
    """The `agent` node: `model` with `tools` bound, on the conversation so far (sync and async
    bodies)."""
    bound = model.bind_tools(list(tools))

    # The config is passed on explicitly so the model call stays a child of this node's run
    # (and so of the recorder's spans) whatever executor the node body ends up on.
    def call_model(state: MessagesState, config: RunnableConfig) -> dict:
        return {"messages": [bound.invoke(state["messages"], config)]}

    async def acall_model(state: MessagesState, config: RunnableConfig) -> dict:
        return {"messages": [await bound.ainvoke(state["messages"], config)]}

    return RunnableLambda(call_model, afunc=acall_model, name="agent")


def build_tool_loop(
    *, name: str, model: BaseChatModel, tools: Sequence[BaseTool]
) -> CompiledStateGraph:
    """Compile the agent/tools loop under `name` (the agent name tool ids are qualified with)."""
    graph = StateGraph(MessagesState)
    graph.add_node("agent", model_node(model, tools))
    graph.add_node("tools", ToolNode(list(tools)))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile(name=name)


def last_tool_result(messages: Sequence[BaseMessage]) -> Any:
    """The most recent tool result in a conversation, decoded from JSON when it is JSON.
    Used by scripted turns that answer from what a tool actually returned."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            text = str(message.text)
            try:
                return json.loads(text)
            except (TypeError, ValueError):
                return text
        if isinstance(message, AIMessage) and not message.tool_calls:
            break
    return None
