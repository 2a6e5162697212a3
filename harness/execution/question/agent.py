"""What tracegrade calls on what a target's factory builds: the user's agent, as types.

An `agent:` factory returns a compiled LangGraph graph; a `chat_model:` target's is a chat model
(LangChain's `BaseChatModel`, or any runnable of messages, `bind_tools` included). The runner
only invokes it; for a graph it also writes a question's opening state (`start_at:`) and reads
its input schema (the pre-flight's `state:` check). Each protocol names one of those uses and no
more, so a graph built any way (a `StateGraph`, the functional API, a `RemoteGraph`) fits, and
the two that are asked of an object at run time (`StateWriter`, `InputSchema`) check exactly
the attribute the code calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["Agent", "AgentFactory", "Copies", "InputSchema", "StateWriter"]


class Agent(Protocol):
    """What a target's factory builds, as the runner invokes it."""

    # The input is the mode's own: messages for a chat model, the graph's input state or a
    # `Command(resume=...)` for a graph; a graph's `InputT` is its state schema, so no one
    # type fits every graph.
    async def ainvoke(self, input: Any, config: RunnableConfig | None = None) -> object: ...


AgentFactory = Callable[..., Agent]
"""An `agent:` factory (called with `environment=` when the target declares one), or a
`chat_model:` factory."""


@runtime_checkable
class Copies(Protocol):
    """A graph that copies itself with some attributes changed (`Pregel.copy`): how a question
    run gets its own checkpointer without touching the shared graph."""

    def copy(self, update: dict[str, object] | None = None) -> Agent: ...


@runtime_checkable
class StateWriter(Protocol):
    """A graph whose thread's state can be written (LangGraph's `update_state`): how a
    question's `start_at:` begins after a node."""

    async def aupdate_state(
        self, config: RunnableConfig, values: dict[str, object], as_node: str | None = None
    ) -> object: ...


@runtime_checkable
class InputSchema(Protocol):
    """A graph that can render its input state's JSON Schema."""

    def get_input_jsonschema(
        self, config: RunnableConfig | None = None
    ) -> Mapping[str, object]: ...
