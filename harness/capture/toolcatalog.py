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

import inspect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import suggest

__all__ = ["ToolCatalog", "tool_catalog", "tool_nodes"]


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
    arguments: Mapping[str, Mapping[str, str | None] | None] = field(default_factory=dict)
    """By tool name and by qualified id: the arguments a model may pass it (name -> JSON type,
    None when the schema gives none), from the tool's call schema; None when the tool takes
    any argument (`**kwargs`) or its schema cannot be read."""

    def argument_problem(self, tool: str, argument: str) -> tuple[str, str | None] | None:
        """None when `tool` takes `argument` (or the catalog cannot tell); else (message,
        did-you-mean hint naming its arguments)."""
        if not self.complete or not isinstance(argument, str):
            return None
        accepted = self.arguments.get(tool)
        if accepted is None or argument in accepted:
            return None
        close = suggest(argument, sorted(accepted))
        listed = ", ".join(sorted(accepted)) or "none"
        hint = f"did you mean {close!r}? " if close else ""
        return f"tool {tool!r} has no argument {argument!r}", f"{hint}(its arguments: {listed})"

    def argument_type(self, tool: str, argument: str) -> str | None:
        """The JSON type the tool's schema gives `argument` (`string`, `integer`...), or None."""
        accepted = self.arguments.get(tool)
        return accepted.get(argument) if accepted else None

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
    close = suggest(name, sorted(known))
    return f"did you mean {close!r}?" if close else None


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
        self.arguments: dict[str, dict[str, str | None] | None] = {}
        self.agents: set[str] = set()
        self.tool_nodes = 0
        self.nodes: list[tuple[Any, str]] = []
        """Each `ToolNode` found, with the agent whose calls it runs."""
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
            self.nodes.append((bound, agent))
            for tool in bound.tools_by_name.values():
                self.tool(tool, agent)
        else:  # a plain node: a graph it invokes from its closure is a sub-agent
            for func in (getattr(bound, "func", None), getattr(bound, "afunc", None)):
                for obj in _referenced(func) if func is not None else ():
                    if _is_graph(obj):
                        self.graph(obj, str(getattr(obj, "name", None) or node_name))

    def tool(self, tool: Any, agent: str) -> None:
        tool = getattr(tool, "wrapped", tool)  # a question's world proxies the real tool
        name = str(getattr(tool, "name", ""))
        if not name:
            return
        self.tools.add(name)
        self.qualified.add(f"{agent}:{name}")
        accepted = _arguments(tool)
        for key in (name, f"{agent}:{name}"):  # one name, several tools: any of them fits
            if key in self.arguments and (accepted is None or self.arguments[key] is None):
                self.arguments[key] = None
            elif key in self.arguments:
                self.arguments[key] = {**(accepted or {}), **(self.arguments[key] or {})}
            else:
                self.arguments[key] = accepted
        for func in (getattr(tool, "func", None), getattr(tool, "coroutine", None)):
            for obj in _referenced(func) if func is not None else ():
                if _is_graph(obj):  # a sub-agent run from inside the tool
                    self.graph(obj, str(getattr(obj, "name", None) or name))


def _arguments(tool: Any) -> dict[str, str | None] | None:
    """The arguments a model may pass `tool` (name -> JSON type), from its call schema (what the
    model sees: injected arguments such as a `RunnableConfig` left out); None when it takes any
    (a function with `**kwargs`) or its schema cannot be read."""
    for func in (getattr(tool, "func", None), getattr(tool, "coroutine", None)):
        try:
            parameters = inspect.signature(func).parameters.values() if func else ()
        except (TypeError, ValueError):
            return None
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            return None
    try:
        schema = tool.tool_call_schema
        shape = schema.model_json_schema() if hasattr(schema, "model_json_schema") else schema
    except Exception:  # a tool's own schema code failing: nothing to check against
        return None
    properties = shape.get("properties") if isinstance(shape, dict) else None
    if not isinstance(properties, dict) or shape.get("additionalProperties") not in (None, False):
        return None
    return {
        str(name): (
            spec.get("type")
            if isinstance(spec, dict) and isinstance(spec.get("type"), str)
            else None
        )
        for name, spec in properties.items()
    }


def tool_nodes(graph: Any, *, agent_name: str | None = None) -> list[tuple[Any, str]]:
    """Every `ToolNode` of a built graph (its subgraphs' and the sub-agents its tools run
    included), with the name of the agent whose calls it runs."""
    if not _is_graph(graph):
        return []
    walker = _Walker()
    walker.graph(graph, str(agent_name or getattr(graph, "name", None) or "agent"))
    return walker.nodes


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
        arguments=walker.arguments,
    )
