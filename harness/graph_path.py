"""The path through the graph: which LangGraph nodes ran, in which subgraph, in which superstep
and invocation, and how each ended. Floor 1: plain data the recorder, the trace readers and the
`nodes:` grader share; nothing here imports from tracegrade.

Read from LangGraph's own callback metadata (`langgraph_node`, `langgraph_step`,
`checkpoint_ns`), never from message text. Nodes of one superstep of one (sub)graph ran as
parallel branches: they have no order among themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["NODE_OUTCOMES", "NodeRun", "decode_nodes", "encode_nodes", "namespace_of", "ordered"]

NODE_OUTCOMES = ("ok", "error", "interrupted", "cancelled")


@dataclass(frozen=True, slots=True)
class NodeRun:
    """One run of one graph node during a question run."""

    seq: int
    """Start order among the question run's node runs (0-based)."""
    name: str
    """The node's name in its graph (`router`, `refund_agent`, `tools`)."""
    namespace: tuple[str, ...] = ()
    """The subgraph nodes it ran inside, outermost first (`("inner",)` for a node of the
    subgraph added as node `inner`); () at the top level."""
    step: int | None = None
    """LangGraph's superstep number within its (sub)graph; nodes sharing one ran in parallel."""
    invocation: int = 0
    """Which invocation of the graph ran it: 0, then +1 per resume after an interrupt or per
    conversation turn (agentevals' `steps` are grouped the same way)."""
    agent: str = ""
    """The (sub)graph whose task it was."""
    depth: int = 0
    start_ns: int = 0
    end_ns: int = 0
    outcome: str = "ok"
    """ok | error | interrupted (it raised `interrupt()` or paused before a node) | cancelled."""

    @property
    def path(self) -> str:
        """`inner:inner_1`: the namespace and the name, as agentevals names subgraph nodes."""
        return ":".join((*self.namespace, self.name)) if self.namespace else self.name

    @property
    def group(self) -> tuple[int, tuple[str, ...], int | None]:
        """(invocation, namespace, step): the node runs of one group ran in parallel."""
        return (self.invocation, self.namespace, self.step)


def namespace_of(checkpoint_ns: Any) -> tuple[str, ...]:
    """The enclosing subgraph nodes of a node, from its `checkpoint_ns` metadata
    (`"inner:<task id>|deeper:<task id>"`): `("inner", "deeper")`."""
    if not isinstance(checkpoint_ns, str) or not checkpoint_ns:
        return ()
    return tuple(part.split(":", 1)[0] for part in checkpoint_ns.split("|") if part)


def encode_nodes(nodes: Iterable[NodeRun]) -> str:
    """The node runs as one JSON attribute value (the question span's `tracegrade.nodes`)."""
    return json.dumps(
        [
            [
                n.name,
                list(n.namespace),
                n.step,
                n.invocation,
                n.agent,
                n.depth,
                n.start_ns,
                n.end_ns,
                n.outcome,
            ]
            for n in nodes
        ],
        ensure_ascii=False,
    )


def decode_nodes(text: Any) -> tuple[NodeRun, ...]:
    """`encode_nodes` read back; () for anything that is not such a list."""
    try:
        rows = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return ()
    out: list[NodeRun] = []
    for seq, row in enumerate(rows if isinstance(rows, list) else ()):
        if not isinstance(row, list) or len(row) < 9:
            continue
        name, namespace, step, invocation, agent, depth, start, end, outcome = row[:9]
        out.append(
            NodeRun(
                seq=seq,
                name=str(name),
                namespace=tuple(str(p) for p in namespace or ()),
                step=step if isinstance(step, int) else None,
                invocation=int(invocation or 0),
                agent=str(agent or ""),
                depth=int(depth or 0),
                start_ns=int(start or 0),
                end_ns=int(end or 0),
                outcome=str(outcome or "ok"),
            )
        )
    return tuple(out)


def ordered(nodes: Sequence[NodeRun]) -> list[NodeRun]:
    """Node runs in start order (the recorder's and every trace reader's)."""
    return sorted(nodes, key=lambda n: (n.start_ns, n.seq))
