"""The tool catalog of a built graph names exactly what the recorder records: every recorded
call's name and qualified id is in it, and a misspelt name is not, with a did-you-mean."""

from __future__ import annotations

import pytest
from langgraph.graph import START, MessagesState, StateGraph

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import delegating_tool, lookup, react_agent, supervisor_with_subgraph
from tracegrade import Recorder
from tracegrade.capture.toolcatalog import tool_catalog


def researcher(turns):
    return react_agent(ScriptedChatModel(script=turns), [lookup], name="researcher")


def recorded(tracer, graph, name):
    rec = Recorder(tracer=tracer, question_id="q", dataset="ds", target="t", agent_name=name)
    with rec.question_span():
        state = graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    return list(rec.seal(state))


def test_subgraph_node_calls_are_in_the_catalog(spans) -> None:
    tracer, _ = spans
    sub = researcher(
        [say(""), say(""), call(tool_call("lookup", {"q": "deep"}, id="r1")), say("sub done")]
    )
    parent = supervisor_with_subgraph(
        ScriptedChatModel(script=[call(tool_call("lookup", {"q": "top"}, id="t1")), say("go")]),
        sub,
    )
    calls = recorded(tracer, parent, "supervisor")
    catalog = tool_catalog(parent)
    assert {c.qualified_id for c in calls} == {"supervisor:lookup", "researcher:lookup"}
    for c in calls:
        assert catalog.problem(c.name) is None and catalog.problem(c.qualified_id) is None
    assert {"supervisor", "researcher"} <= catalog.agents


def test_sub_agent_run_from_a_tool_is_in_the_catalog(spans) -> None:
    tracer, _ = spans
    sub = researcher([call(tool_call("lookup", {"q": "inner"}, id="r1")), say("inner answer")])
    boss = react_agent(
        ScriptedChatModel(
            script=[call(tool_call("delegate", {"task": "dig"}, id="d1")), say("ok")]
        ),
        [delegating_tool(sub)],
        name="boss",
    )
    calls = recorded(tracer, boss, "boss")
    catalog = tool_catalog(boss)
    assert {c.qualified_id for c in calls} == {"boss:delegate", "researcher:lookup"}
    for c in calls:
        assert catalog.problem(c.qualified_id) is None
    assert catalog.tools == {"delegate", "lookup"}


@pytest.mark.parametrize(
    "name,message,hint",
    [
        ("lokup", "has no tool 'lokup'", "did you mean 'lookup'?"),
        ("researcher:lokup", "agent 'researcher' has no tool 'lokup'", "'researcher:lookup'"),
        ("resercher:lookup", "no agent 'resercher'", "'researcher:lookup'"),
    ],
)
def test_misspelt_names_get_a_suggestion(name: str, message: str, hint: str) -> None:
    catalog = tool_catalog(react_agent(ScriptedChatModel(script=[]), [lookup], name="researcher"))
    problem = catalog.problem(name)
    assert problem is not None
    assert message in problem[0]
    assert problem[1] is not None and hint in problem[1]


def test_graph_without_tool_nodes_checks_nothing() -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": []})
    builder.add_edge(START, "agent")
    catalog = tool_catalog(builder.compile(name="plain"))
    assert not catalog.complete
    assert catalog.problem("anything") is None
    assert catalog.notes
