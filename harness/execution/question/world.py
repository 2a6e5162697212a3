"""The world a question sets for its run: tool overrides (faults, fixtures, delays, planted
text), graph state seeded beside the messages, and a run started after a node.

The runner asks `question_world` for each question run; a question and target without
`tools:` cost two attribute reads. A graph's tools are proxied (`capture.world_tools`) the
first time a question that overrides them runs on it, once per graph.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...world import WORLD_KEY, ToolWorld, merged_overrides
from .agent import Agent, StateWriter

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from ...inputs.config import TargetConfig
    from ...inputs.dataset import Question

__all__ = ["WORLD_KEY", "opening_inputs", "question_world"]

_proxied: weakref.WeakSet[object] = weakref.WeakSet()
"""Graphs whose tools are proxied already."""


def question_world(runnable: object, target: TargetConfig, question: Question) -> ToolWorld | None:
    """The question run's `ToolWorld` (its overrides over the target's), the graph's tools
    proxied; None when neither sets `tools:`."""
    own = getattr(question, "tools", None)
    if not (own or target.tools):
        return None
    if runnable not in _proxied:
        from ...capture.world_tools import install_world

        install_world(runnable, agent_name=getattr(runnable, "name", None) or target.name)
        _proxied.add(runnable)
    return ToolWorld(merged_overrides(target.tools, own))


async def opening_inputs(
    graph: Agent,
    question: Question,
    messages: Sequence[Mapping[str, object]],
    config: RunnableConfig,
) -> dict[str, object] | None:
    """What the first invoke of a question run sends: the messages and the question's `state:`
    keys; with `start_at:`, that state is written as the node's output on the question's
    thread (LangGraph's `update_state(as_node=...)`) and the run continues from it (None)."""
    state = getattr(question, "state", None)
    inputs = {"messages": messages, **(state or {})}
    start_at = getattr(question, "start_at", None)
    if start_at is None:
        return inputs
    if not isinstance(graph, StateWriter):  # the pre-flight found no such node on it
        raise AttributeError(f"{type(graph).__name__!r} object has no attribute 'aupdate_state'")
    await graph.aupdate_state(config.copy(), inputs, as_node=start_at)
    return None
