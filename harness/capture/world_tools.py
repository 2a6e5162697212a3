"""Per-question tool overrides applied to any LangGraph agent without changing its code.

Each tool of each `ToolNode` the graph holds (subgraphs and sub-agents run from tools
included: the tool catalog's walk) is replaced, once per built graph, by a `WorldTool`: a
`BaseTool` with the same name, schema and error handling that runs the wrapped tool's own
`_run`/`_arun`. LangChain's tool machinery (argument parsing, callbacks, `handle_tool_error`)
runs once, around the proxy, so the record sees one call whatever the world did, and a
planted fault meets the agent's error handling exactly as a real one would.

The proxy reads the question's overrides from `config["configurable"][WORLD_KEY]` (a
`tracegrade.world.ToolWorld`, set by the runner only for a question that has overrides): a
question without one costs a dict lookup per tool call, and a graph is proxied only when some
question of the run sets overrides. An overridden call dispatches the custom callback event
`WORLD_EVENT` from inside the tool's run, so the recorder marks that call (`ToolCall.world`)
and every other handler (LangSmith, a user's) sees what the world did.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from typing import Any

from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException

from ..world import WORLD_KEY, ToolOverride, ToolWorld

__all__ = ["WORLD_EVENT", "WORLD_KEY", "RateLimitError", "WorldTool", "install_world"]

WORLD_EVENT = "tracegrade.world"
"""The custom callback event an overridden call dispatches: `{"mark": "<what the world did>"}`."""


class RateLimitError(Exception):
    """A planted rate-limit answer (HTTP 429), as a client library would raise it."""

    status_code = 429


def _fault(override: ToolOverride, tool: str) -> Exception:
    message = override.message
    if override.fail == "timeout":
        return TimeoutError(message or f"{tool}: the request timed out")
    if override.fail == "rate_limit":
        return RateLimitError(message or f"{tool}: rate limit exceeded (429), retry later")
    return ToolException(message or f"{tool}: internal error")


def _planted(result: Any, override: ToolOverride, artifact: bool) -> Any:
    """`result` with the override's text planted in it (in the content of a
    content-and-artifact pair)."""
    inject = override.inject
    if inject is None:
        return result
    if artifact and isinstance(result, tuple) and len(result) == 2:
        return (_planted(result[0], override, False), result[1])
    if inject.mode == "replace":
        return inject.text
    if not isinstance(result, str):
        result = json.dumps(result, ensure_ascii=False, default=str)
    return f"{result}\n\n{inject.text}"


def _passing(func: Any) -> tuple[bool, str | None]:
    """(takes `run_manager`, the name of its `RunnableConfig` parameter): what LangChain's tool
    machinery would pass `func`."""
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False, None
    config = next(
        (
            name
            for name, p in parameters.items()
            if p.annotation in (RunnableConfig, "RunnableConfig")
        ),
        "config" if "config" in parameters else None,
    )
    return "run_manager" in parameters, config


def _passed(func: Any, kwargs: dict, config: Any, run_manager: Any) -> dict:
    """`kwargs` with the run manager and config `func` takes, as LangChain would pass them."""
    wants_manager, config_name = _passing(func)
    extra = dict(kwargs)
    if wants_manager:
        extra["run_manager"] = run_manager
    if config_name:
        extra[config_name] = config
    return extra


class WorldTool(BaseTool):
    """A graph's tool, as the question's world sees it (see the module docstring)."""

    wrapped: BaseTool
    agent: str = ""

    @classmethod
    def of(cls, tool: BaseTool, agent: str) -> WorldTool:
        return cls(
            name=tool.name,
            description=tool.description,
            args_schema=tool.args_schema,
            return_direct=tool.return_direct,
            response_format=tool.response_format,
            handle_tool_error=tool.handle_tool_error,
            handle_validation_error=tool.handle_validation_error,
            tags=tool.tags,
            metadata=tool.metadata,
            extras=getattr(tool, "extras", None),
            wrapped=tool,
            agent=agent,
        )

    @property
    def tool_call_schema(self) -> Any:
        return self.wrapped.tool_call_schema

    def _to_args_and_kwargs(self, tool_input: Any, tool_call_id: str | None) -> Any:
        return self.wrapped._to_args_and_kwargs(tool_input, tool_call_id)

    def _take(self, config: RunnableConfig | None) -> tuple[ToolOverride | None, int]:
        world = ((config or {}).get("configurable") or {}).get(WORLD_KEY)
        if not isinstance(world, ToolWorld):
            return None, 0
        return world.take(self.agent, self.name)

    def _artifact(self) -> bool:
        return self.response_format == "content_and_artifact"

    def _fixture(self, override: ToolOverride) -> Any:
        return (override.returns, None) if self._artifact() else override.returns

    # -- sync -----------------------------------------------------------------------------
    def _run(
        self, *args: Any, config: RunnableConfig, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        override, call = self._take(config)
        if override is None:
            return self._run_wrapped(args, kwargs, config, run_manager)
        if run_manager is not None:
            dispatch_custom_event(
                WORLD_EVENT,
                {"mark": override.describe(call), "tool": self.name},
                config={"callbacks": run_manager.get_child()},
            )
        if override.delay_s:
            time.sleep(override.delay_s)
        if override.fail:
            raise _fault(override, self.name)
        if override.has_returns:
            result = self._fixture(override)
        else:
            result = self._run_wrapped(args, kwargs, config, run_manager)
        return _planted(result, override, self._artifact())

    def _run_wrapped(self, args: tuple, kwargs: dict, config: Any, run_manager: Any) -> Any:
        func = self.wrapped._run
        return func(*args, **_passed(func, kwargs, config, run_manager))

    # -- async ----------------------------------------------------------------------------
    async def _arun(
        self, *args: Any, config: RunnableConfig, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        override, call = self._take(config)
        if override is None:
            return await self._arun_wrapped(args, kwargs, config, run_manager)
        if run_manager is not None:
            await adispatch_custom_event(
                WORLD_EVENT,
                {"mark": override.describe(call), "tool": self.name},
                config={"callbacks": run_manager.get_child()},
            )
        if override.delay_s:
            await asyncio.sleep(override.delay_s)
        if override.fail:
            raise _fault(override, self.name)
        if override.has_returns:
            result = self._fixture(override)
        else:
            result = await self._arun_wrapped(args, kwargs, config, run_manager)
        return _planted(result, override, self._artifact())

    async def _arun_wrapped(self, args: tuple, kwargs: dict, config: Any, run_manager: Any):
        tool = self.wrapped
        # as BaseTool.arun does: a tool without its own `_arun` runs `_run` in a thread
        func = tool._run if type(tool)._arun is BaseTool._arun else tool._arun
        return await tool._arun(*args, **_passed(func, kwargs, config, run_manager))


def install_world(graph: Any, *, agent_name: str | None = None) -> int:
    """Proxy every tool of every `ToolNode` of `graph` (once: a proxied tool is left as it
    is); returns how many tools are proxied. The graph behaves as before for any question
    without overrides."""
    from .toolcatalog import tool_nodes

    count = 0
    for node, agent in tool_nodes(graph, agent_name=agent_name):
        tools = node.tools_by_name
        for name, tool in list(tools.items()):
            if not isinstance(tool, WorldTool):
                tools[name] = WorldTool.of(tool, agent)
            count += 1
    return count
