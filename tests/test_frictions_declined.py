"""A declined approval (issue 45, item 19): the approval node answers the model's call with a
ToolMessage of status error instead of letting the tool run. It is recorded as a declined
call, decided from the record's structure (the node that answered it is the node that paused
and was resumed), never from the message text, and drawn as declined, not as an error; a call
of a tool the graph does not have stays not_executed."""

from __future__ import annotations

from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import lookup, react_agent
from tests.test_interrupts_run import APPROVED, project
from tracegrade import Outcome, Recorder, load_config, read_records, start_run
from tracegrade.reports.html import write_html

DECLINED = {
    **APPROVED,
    "id": "declined",
    "resume": [{"approve": False}],
    "expected_interrupts": {"count": 1},
    "trajectory": {"forbid": ["issue_refund"]},
    "metadata": {},
}


def test_a_declined_approval_is_recorded_as_declined_and_drawn_so(tmp_path):
    outcome = start_run(load_config(project(tmp_path, [DECLINED])))
    assert outcome.exit_code == 0
    records = read_records(next((outcome.run_dir / "traces").iterdir()))
    (record,) = records.values()
    refund = next(c for c in record if c.name == "issue_refund")
    assert refund.outcome is Outcome.DECLINED and refund.error_type is None
    (asked,) = record.interruptions
    assert (asked.node, asked.resumed) == ("approval", True)
    write_html(outcome, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert '"n":"issue_refund"' in html and '"o":"declined"' in html
    assert "UnknownTool" not in html and ".o-declined{" in html


def _guarded_graph(*, ask: bool):
    """A model calling `lookup`; a guard node answering the call with an error ToolMessage
    instead of running it, after pausing to ask a person when `ask`."""
    model = ScriptedChatModel(script=[call(tool_call("lookup", {"q": "A-17"}, id="c1")), say("ok")])

    def agent(state):
        return {"messages": [model.invoke(state["messages"])]}

    def guard(state):
        if not state["messages"][-1].tool_calls:
            return Command(goto=END)
        if ask:
            interrupt({"question": "may I look it up?"})
        # the same words either way: the outcome must not depend on them
        reply = ToolMessage("declined", tool_call_id="c1", status="error", name="lookup")
        return Command(goto="agent", update={"messages": [reply]})

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("guard", guard, destinations=("agent", END))
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "guard")
    return builder.compile(name="desk", checkpointer=InMemorySaver())


def _record(spans, graph, *answers):
    tracer, _ = spans
    rec = Recorder(tracer=tracer, question_id="q", dataset="ds", target="t", agent_name="desk")
    config = {"callbacks": [rec], "configurable": {"thread_id": "q"}}
    with rec.question_span():
        state = graph.invoke({"messages": [("user", "refund A-17")]}, config)
        for answer in answers:
            state = graph.invoke(Command(resume=answer), config)
    return rec.seal(state)


def test_the_node_that_asked_and_then_answered_the_call_declined_it(spans):
    (call_,) = _record(spans, _guarded_graph(ask=True), {"approve": False})
    assert (call_.name, call_.outcome, call_.error_type) == ("lookup", Outcome.DECLINED, None)


def test_a_call_answered_without_asking_anyone_is_not_a_declined_approval(spans):
    (call_,) = _record(spans, _guarded_graph(ask=False))
    assert call_.outcome is Outcome.NOT_EXECUTED  # no person was asked: nothing declined it


def test_a_tool_the_graph_does_not_have_stays_not_executed(spans):
    model = ScriptedChatModel(script=[call(tool_call("delete_all", {}, id="x1")), say("ok")])
    graph = react_agent(model, [lookup], name="desk", handle_tool_errors=True)
    (call_,) = _record(spans, graph)
    assert (call_.outcome, call_.error_type) == (Outcome.NOT_EXECUTED, "UnknownTool")
