"""The graph-trajectory cases of agentevals' own tests (langchain-ai/agentevals,
python/tests/graph_trajectory/test_graph_trajectory_match.py), expressed as `nodes:` blocks
against records holding the same node runs, with agentevals' verdict for each. agentevals
compares `steps` (one list of node names per invocation); a record of ours holds the same runs,
a subgraph's nodes under its namespace (`inner:inner_1`) and a pause as `__interrupt__`.

Where we differ, on purpose:
- `__start__` is ignored on both sides: LangGraph runs it without a callback, so a live record
  never holds it (agentevals reads it from checkpoints). Every case below keeps its verdict.
- Both paths empty: agentevals passes every mode. `nodes_grader` fails a record with no graph
  path at all (no evidence: not a LangGraph graph, or a trace without node metadata); the
  matching itself agrees (`match_nodes` on two empty paths passes), asserted separately.
- strict: agentevals compares each invocation's list in order; we do the same, except that nodes
  of one superstep (parallel branches) match in any order. The corpus's lists carry no
  supersteps, so each node is its own step here and the order counts as in agentevals.
"""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from opentelemetry.sdk.trace import TracerProvider

from tracegrade import Recorder, ToolRecord
from tracegrade.graders.nodes import INTERRUPT, NodesGrader, match_nodes, node_steps
from tracegrade.graph_path import NodeRun

MODES = ("strict", "unordered", "subset", "superset")


class InnerState(TypedDict):
    my_key: Annotated[str, operator.add]
    my_other_key: str


class State(TypedDict):
    my_key: Annotated[str, operator.add]


def record_of(steps: list[list[str]]) -> ToolRecord:
    """A record whose node runs are agentevals' `steps`: one invocation per list, each node its
    own superstep, `__interrupt__` marking the node before it as paused."""
    nodes: list[NodeRun] = []
    clock = 0
    for invocation, names in enumerate(steps):
        for step, name in enumerate(names):
            if name == INTERRUPT:
                last = nodes[-1]
                nodes[-1] = NodeRun(**{**_fields(last), "outcome": "interrupted"})
                continue
            *namespace, own = name.split(":")
            clock += 1
            nodes.append(
                NodeRun(
                    seq=len(nodes),
                    name=own,
                    namespace=tuple(namespace),
                    step=step,
                    invocation=invocation,
                    start_ns=clock,
                    end_ns=clock,
                )
            )
    return ToolRecord([], nodes=nodes)


def _fields(node: NodeRun) -> dict:
    return {f: getattr(node, f) for f in NodeRun.__slots__}


# (case, outputs' steps, reference steps, agentevals' verdict per mode)
CASES = [
    (
        "identical",
        [["__start__", "agent", "tools", "__interrupt__"], ["agent"]],
        [["__start__", "agent", "tools", "__interrupt__"], ["agent"]],
        dict.fromkeys(MODES, True),
    ),
    (
        "same nodes, different order",
        [["__start__", "tools", "agent"], ["agent"]],
        [["__start__", "agent", "tools"], ["agent"]],
        {"strict": False, "unordered": True, "subset": True, "superset": True},
    ),
    (
        "same nodes, different turns",
        [["__start__", "agent", "tools"], ["agent"]],
        [["__start__", "agent", "tools", "agent"]],
        {"strict": False, "unordered": True, "subset": True, "superset": True},
    ),
    (
        "output has extra nodes",
        [["__start__", "agent", "tools", "retriever"], ["agent"]],
        [["__start__", "agent", "tools"], ["agent"]],
        {"strict": False, "unordered": False, "subset": False, "superset": True},
    ),
    (
        "output has fewer nodes",
        [["__start__", "agent"]],
        [["__start__", "agent", "tools"], ["agent"]],
        {"strict": False, "unordered": False, "subset": True, "superset": False},
    ),
    (
        "completely different nodes",
        [["__start__", "planner", "executor"]],
        [["__start__", "agent", "tools"]],
        dict.fromkeys(MODES, False),
    ),
    (
        "subgraph nodes",
        [
            ["__start__", "outer_1", "inner", "inner:__start__", "inner:inner_1", "inner:inner_2"],
            ["outer_2"],
        ],
        [
            ["__start__", "outer_1", "inner", "inner:__start__", "inner:inner_1", "inner:inner_2"],
            ["outer_2"],
        ],
        dict.fromkeys(MODES, True),
    ),
    (
        "duplicate nodes, unordered",
        [["__start__", "agent", "tools", "agent"]],
        [["__start__", "agent", "tools", "agent", "agent"]],
        {"unordered": False},
    ),
    (
        "duplicate nodes, superset",
        [["__start__", "agent", "tools", "agent", "agent"]],
        [["__start__", "agent", "tools", "agent"]],
        {"superset": True},
    ),
    (
        "interrupt missing from the reference",
        [["__start__", "agent", "tools", "__interrupt__"], ["agent"]],
        [["__start__", "agent", "tools"], ["agent"]],
        {"strict": False},
    ),
]
PARAMS = [
    pytest.param(outputs, reference, mode, verdict, id=f"{case}-{mode}")
    for case, outputs, reference, verdicts in CASES
    for mode, verdict in verdicts.items()
]


@pytest.mark.parametrize(("outputs", "reference", "mode", "verdict"), PARAMS)
def test_nodes_grader_agrees_with_agentevals(outputs, reference, mode, verdict):
    result = NodesGrader().grade(
        "q", "a", {"tool_calls": record_of(outputs), "nodes": {"match": mode, "steps": reference}}
    )
    assert result.score == (1.0 if verdict else 0.0), result.reason
    if not verdict:
        assert "path: " in result.reason  # a failure always shows the path the run took


def test_both_empty_agrees_in_the_matching_and_the_grader_asks_for_evidence():
    for mode in MODES:
        assert match_nodes([], {"match": mode, "steps": []})[0]
    result = NodesGrader().grade("q", "a", {"tool_calls": ToolRecord([]), "nodes": {"steps": []}})
    assert result.score == 0.0 and "holds no graph path" in result.reason


def test_the_subgraph_case_reads_as_agentevals_names_it():
    steps = node_steps(record_of([["__start__", "inner", "inner:inner_1", "__interrupt__"]]))
    assert steps == [[["inner"], ["inner:inner_1"], [INTERRUPT]]]


def test_the_path_of_agentevals_nested_interrupt_graph_as_the_recorder_sees_it():
    """agentevals' extraction test graph (graph_trajectory/test_graph_trajectory_utils.py): two
    parallel branches from the start (a subgraph `inner` that pauses before `inner_2`, and
    `outer_1`), joined into `outer_2`, run, paused, then resumed. agentevals reads the path back
    from the thread's checkpoints as
    [[__start__, outer_1, inner, inner:__start__, inner:inner_1, inner:inner_2], [outer_2]];
    the recorder sees it as it happens: the resumed `inner` and `inner:inner_2` ran in the
    second invocation (agentevals files them under the first, where their checkpoints began),
    and the first invocation ends paused in `inner`. Every node agentevals reads ran here too
    (`superset` passes); the re-run of `inner` on resume and the pause are ours alone."""
    inner = StateGraph(InnerState)
    inner.add_node("inner_1", lambda s: {"my_key": "got here", "my_other_key": s["my_key"]})
    inner.add_node("inner_2", lambda s: {"my_key": " and there", "my_other_key": s["my_key"]})
    inner.add_edge("inner_1", "inner_2")
    inner.set_entry_point("inner_1")
    inner.set_finish_point("inner_2")
    graph = StateGraph(State)
    graph.add_node("inner", inner.compile(interrupt_before=["inner_2"]))
    graph.add_node("outer_1", lambda s: {"my_key": " and parallel"})
    graph.add_node("outer_2", lambda s: {"my_key": " and back again"})
    graph.add_edge("__start__", "inner")
    graph.add_edge("__start__", "outer_1")
    graph.add_edge(["inner", "outer_1"], "outer_2")
    graph.set_finish_point("outer_2")
    app = graph.compile(checkpointer=InMemorySaver(), name="outer")

    rec = Recorder(
        tracer=TracerProvider().get_tracer("t"),
        question_id="q",
        dataset="d",
        target="t",
        agent_name="outer",
    )
    config = {"configurable": {"thread_id": "1"}, "callbacks": [rec]}
    with rec.question_span():
        app.invoke({"my_key": ""}, config)
        final = app.invoke(None, config)
    record = rec.seal()
    assert final["my_key"] == "got here and there and parallel and back again"
    steps = node_steps(record)
    # the parallel branches share a superstep: one group, in any order
    assert sorted(steps[0][0]) == ["inner", "outer_1"]
    assert steps[0][1:] == [["inner:inner_1"], [INTERRUPT]]
    assert steps[1] == [["inner"], ["inner:inner_2"], ["outer_2"]]
    paused = [n for n in record.nodes if n.outcome == "interrupted"]
    assert [n.path for n in paused] == ["inner"]  # the node that raised the interrupt
    agentevals = [
        ["__start__", "outer_1", "inner", "inner:__start__", "inner:inner_1", "inner:inner_2"],
        ["outer_2"],
    ]
    result = NodesGrader().grade(
        "q", "", {"tool_calls": record, "nodes": {"match": "superset", "steps": agentevals}}
    )
    assert result.score == 1.0, result.reason
