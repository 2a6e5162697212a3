"""Small LangGraph graphs and tools the capture tests drive (imported by tests only).

Graphs are built with `StateGraph` + `ToolNode` + `tools_condition`; the model node has a sync
and an async body so `invoke` and `ainvoke` both run natively.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

__all__ = [
    "ask_human",
    "boom",
    "delegating_tool",
    "fetch",
    "flaky",
    "handoff_to_finish",
    "lookup",
    "react_agent",
    "set_flag",
    "stall",
    "supervisor_with_subgraph",
    "threaded_tool",
]


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def _fetch(url: str) -> str:
    return f"page at {url}"


async def _afetch(url: str) -> str:
    await asyncio.sleep(0)
    return f"page at {url}"


fetch = StructuredTool.from_function(
    func=_fetch, coroutine=_afetch, name="fetch", description="Fetch a URL (sync and async)."
)


@tool
def boom(reason: str) -> str:
    """Always raises."""
    raise ValueError(f"boom: {reason}")


@tool
def flaky(x: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Answers with an error ToolMessage (status error) instead of raising."""
    return ToolMessage(content=f"could not handle {x}", tool_call_id=tool_call_id, status="error")


@tool
def ask_human(question: str) -> str:
    """Pauses the graph with interrupt() and returns the human's answer."""
    return f"human said {interrupt(question)}"


@tool
def set_flag(flag: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Returns a Command updating the graph state."""
    message = ToolMessage(content=f"flag {flag} set", tool_call_id=tool_call_id)
    return Command(update={"messages": [message]})


@tool
def handoff_to_finish(note: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hands control to the parent graph's `finish` node."""
    message = ToolMessage(content=f"handing off: {note}", tool_call_id=tool_call_id)
    return Command(graph=Command.PARENT, goto="finish", update={"messages": [message]})


@tool
async def stall(seconds: float) -> str:
    """Announces itself on the custom stream, then sleeps (async), so a test can abandon or
    cancel the run while the tool is in flight."""
    get_stream_writer()({"started": "stall"})
    await asyncio.sleep(seconds)
    return "woke up"


def delegating_tool(sub_agent: Any, *, name: str = "delegate"):
    """A tool that runs `sub_agent` in-line, passing its RunnableConfig on."""

    def delegate(task: str, config: RunnableConfig) -> str:
        state = sub_agent.invoke({"messages": [HumanMessage(task)]}, config)
        return state["messages"][-1].text

    async def adelegate(task: str, config: RunnableConfig) -> str:
        state = await sub_agent.ainvoke({"messages": [HumanMessage(task)]}, config)
        return state["messages"][-1].text

    return StructuredTool.from_function(
        func=delegate, coroutine=adelegate, name=name, description="Delegate to a sub-agent."
    )


def threaded_tool(sub_agent: Any, *, pass_config: bool, name: str = "background"):
    """A tool that runs `sub_agent` on a thread it starts itself, passing its RunnableConfig
    on or not (the two behaviours the agent-author docs describe)."""

    def background(task: str, config: RunnableConfig) -> str:
        out: dict[str, Any] = {}

        def work() -> None:
            args = ({"messages": [HumanMessage(task)]},)
            out["state"] = (
                sub_agent.invoke(*args, config) if pass_config else sub_agent.invoke(*args)
            )

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        return out["state"]["messages"][-1].text

    return StructuredTool.from_function(
        func=background, name=name, description="Run a sub-agent on a thread."
    )


def react_agent(
    model: Any,
    tools: Sequence[Any],
    *,
    name: str = "agent",
    handle_tool_errors: Any = None,
    checkpointer: Any = None,
    compile_graph: bool = True,
):
    """model <-> tools loop. `handle_tool_errors=None` keeps ToolNode's default (validation
    errors become error ToolMessages, other exceptions propagate). `compile_graph=False`
    returns the builder (to nest as a node)."""
    bound = model.bind_tools(list(tools))

    def call_model(state: MessagesState) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    async def acall_model(state: MessagesState) -> dict:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", RunnableLambda(call_model, afunc=acall_model, name="model"))
    options = {} if handle_tool_errors is None else {"handle_tool_errors": handle_tool_errors}
    builder.add_node("tools", ToolNode(list(tools), **options))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    if not compile_graph:
        return builder
    return builder.compile(name=name, checkpointer=checkpointer)


def supervisor_with_subgraph(model: Any, sub_agent: Any, *, name: str = "supervisor"):
    """A parent graph: its own model/tools loop, then the compiled `sub_agent` as a node, then a
    `finish` node (the target of a handoff from inside the sub-agent)."""

    def finish(state: MessagesState) -> dict:
        return {"messages": []}

    builder = StateGraph(MessagesState)
    bound = model.bind_tools([lookup])

    def call_model(state: MessagesState) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_node("research", sub_agent)
    builder.add_node("finish", finish)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "research"})
    builder.add_edge("tools", "model")
    builder.add_edge("research", "finish")
    builder.add_edge("finish", END)
    return builder.compile(name=name)
