"""The tools and agent names a LangGraph graph has, read from the built graph, and the check of a
tool name (as `expected_tools` and trajectory expectations write it) against them.

The names are the ones the recorder gives calls: a tool's function name, and its qualified id
`<agent>:<tool>` where the agent is the root graph's name, a subgraph's name (or its node's), or
the name of a graph a tool runs inside it (a sub-agent called from a tool, found in the tool
function's closure or the module globals it uses). A graph whose tools cannot all be seen (no
`ToolNode` anywhere) gives an incomplete catalog, and nothing is checked against it: a wrong
"unknown tool" would block a valid dataset.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCatalog", "tool_catalog"]


@dataclass(frozen=True)
class ToolCatalog:
    """What a graph can call, by the names the recorder gives calls."""

    tools: frozenset[str] = frozenset()
    """Function names of every tool the graph (and the sub-agents it holds) can run."""
    qualified: frozenset[str] = frozenset()
    """Qualified ids `<agent>:<tool>`."""
    agents: frozenset[str] = frozenset()
    """Agent names: the root graph's, subgraph nodes', sub-agents run from tools."""
    complete: bool = True
    """False when the graph's tools could not be seen (no ToolNode): check nothing."""
    notes: tuple[str, ...] = field(default=())
    """Why the catalog is incomplete, for the operator."""

    def problem(self, name: str) -> tuple[str, str | None] | None:
        """None when `name` (a function name, or a qualified id with a colon) names a tool of
        the graph, or when the catalog cannot tell; else (message, did-you-mean hint)."""
        if not self.complete or not isinstance(name, str):
            return None
        if ":" in name:
            if name in self.qualified:
                return None
            agent, _, tool = name.partition(":")
            if agent not in self.agents:
                return (
                    f"no agent {agent!r} in the target's graph (agents: "
                    f"{', '.join(sorted(self.agents))})",
                    _did_you_mean(name, self.qualified),
                )
            return f"agent {agent!r} has no tool {tool!r}", _did_you_mean(name, self.qualified)
        if name in self.tools or name in self.qualified:
            return None
        return f"the target's graph has no tool {name!r}", _did_you_mean(name, self.tools)


def _did_you_mean(name: str, known: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


def _is_graph(obj: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def _referenced(func: Any) -> Iterator[Any]:
    """Objects a function can reach without arguments: its closure cells and the module
    globals its code names (a sub-agent a tool invokes lives in one of these)."""
    func = inspect.unwrap(func) if callable(func) else func
    for cell in getattr(func, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue
    code = getattr(func, "__code__", None)
    module_globals = getattr(func, "__globals__", None) or {}
    for name in getattr(code, "co_names", ()):
        if name in module_globals:
            yield module_globals[name]


class _Walker:
    def __init__(self) -> None:
        self.tools: set[str] = set()
        self.qualified: set[str] = set()
        self.agents: set[str] = set()
        self.tool_nodes = 0
        self._seen: set[tuple[int, str]] = set()

    def graph(self, graph: Any, agent: str) -> None:
        if (id(graph), agent) in self._seen:
            return
        self._seen.add((id(graph), agent))
        self.agents.add(agent)
        for node_name, node in getattr(graph, "nodes", {}).items():
            bound = getattr(node, "bound", node)
            self.runnable(bound, agent, node_name)

    def runnable(self, bound: Any, agent: str, node_name: str) -> None:
        from langgraph.prebuilt import ToolNode

        if _is_graph(bound):
            # a subgraph node: its calls carry the subgraph's own name (the node's when the
            # graph has none of its own); both are accepted
            for name in {node_name, str(getattr(bound, "name", None) or node_name)}:
                self.graph(bound, name)
        elif isinstance(bound, ToolNode):
            self.tool_nodes += 1
            for tool in bound.tools_by_name.values():
                self.tool(tool, agent)
        else:  # a plain node: a graph it invokes from its closure is a sub-agent
            for func in (getattr(bound, "func", None), getattr(bound, "afunc", None)):
                for obj in _referenced(func) if func is not None else ():
                    if _is_graph(obj):
                        self.graph(obj, str(getattr(obj, "name", None) or node_name))

    def tool(self, tool: Any, agent: str) -> None:
        name = str(getattr(tool, "name", ""))
        if not name:
            return
        self.tools.add(name)
        self.qualified.add(f"{agent}:{name}")
        for func in (getattr(tool, "func", None), getattr(tool, "coroutine", None)):
            for obj in _referenced(func) if func is not None else ():
                if _is_graph(obj):  # a sub-agent run from inside the tool
                    self.graph(obj, str(getattr(obj, "name", None) or name))


def tool_catalog(graph: Any, *, agent_name: str | None = None) -> ToolCatalog:
    """The tools and agents of a built graph (`agent_name`: the root agent's name when the
    caller records it under another; default the graph's `name`)."""
    if not _is_graph(graph):
        return ToolCatalog(complete=False, notes=(f"not a LangGraph graph: {type(graph)!r}",))
    walker = _Walker()
    walker.graph(graph, str(agent_name or getattr(graph, "name", None) or "agent"))
    if not walker.tool_nodes:
        return ToolCatalog(
            agents=frozenset(walker.agents),
            complete=False,
            notes=("the graph has no ToolNode: its tools cannot be listed, none checked",),
        )
    return ToolCatalog(
        tools=frozenset(walker.tools),
        qualified=frozenset(walker.qualified),
        agents=frozenset(walker.agents),
    )
