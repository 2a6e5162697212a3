"""Interrupts in the record: each `interrupt()` the graph paused on is a span and an
`Interruption` of the record (payload, node, tool, position among the calls, the answer), the
same whether read live or back from the trace file."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import ask_human, lookup, react_agent
from tracegrade import Outcome, Recorder, RunTelemetry, read_records
from tracegrade.redaction import REDACTED


def recorder(tracer, name="desk", qid="q") -> Recorder:
    return Recorder(tracer=tracer, question_id=qid, dataset="ds", target="t", agent_name=name)


def approval_graph():
    """lookup, then an `approve` node asking twice (interrupt() in a node, not a tool)."""

    def approve(state: MessagesState) -> dict:
        first = interrupt({"question": "approve refund?", "api_token": "tok-123"})
        second = interrupt("really?")
        return {"messages": [AIMessage(content=f"approved={first} {second}")]}

    model = ScriptedChatModel(script=[call(tool_call("lookup", {"q": "A-17"}, id="l1")), say("x")])
    builder = StateGraph(MessagesState)
    builder.add_node("work", react_agent(model, [lookup], name="desk"))
    builder.add_node("approve", approve)
    builder.add_edge(START, "work")
    builder.add_edge("work", "approve")
    builder.add_edge("approve", END)
    return builder.compile(name="desk", checkpointer=InMemorySaver())


def run(graph, tracer, *answers, qid="q"):
    rec = recorder(tracer, qid=qid)
    config = {"callbacks": [rec], "configurable": {"thread_id": qid}}
    with rec.question_span():
        state = graph.invoke({"messages": [("user", "refund A-17")]}, config)
        for answer in answers:
            state = graph.invoke(Command(resume=answer), config)
    return rec.seal(state), state


def test_a_node_interrupt_is_recorded_with_its_payload_node_and_position(spans):
    tracer, exporter = spans
    record, state = run(approval_graph(), tracer, {"approve": True})
    assert [c.name for c in record] == ["lookup"]
    first, second = record.interruptions
    assert (first.node, first.tool, first.agent, first.depth) == ("approve", None, "desk", 0)
    assert first.value == {"question": "approve refund?", "api_token": "tok-123"}
    assert (first.resumed, first.resume_value) == (True, {"approve": True})
    assert first.calls_before == 1  # asked after lookup ran
    assert (second.seq, second.value, second.resumed) == (1, "really?", False)
    assert record.pending == [second]
    assert state["__interrupt__"][0].value == "really?"
    finished = [s for s in exporter.get_finished_spans() if s.name == "tracegrade.interrupt"]
    assert len(finished) == 2
    assert json.loads(finished[0].attributes["tracegrade.interrupt.resume"]) == {"approve": True}
    assert finished[0].attributes["tracegrade.interrupt.node"] == "approve"


def test_a_tool_that_asks_is_named_and_its_rerun_counts_after_the_question(spans):
    tracer, _ = spans
    model = ScriptedChatModel(
        script=[call(tool_call("ask_human", {"question": "ok?"}, id="i1")), say("done")]
    )
    graph = react_agent(model, [ask_human], name="desk", checkpointer=InMemorySaver())
    record, _ = run(graph, tracer, "yes")
    (c,) = record
    (asked,) = record.interruptions
    assert (asked.node, asked.tool, asked.call_id, asked.value) == (
        "tools",
        "ask_human",
        "i1",
        "ok?",
    )
    assert (asked.resumed, asked.resume_value) == (True, "yes")
    assert c.outcome is Outcome.OK and asked.calls_before == 0  # the call that ran came after


def test_unanswered_tool_interrupt_stays_pending(spans):
    tracer, _ = spans
    model = ScriptedChatModel(script=[call(tool_call("ask_human", {"question": "ok?"}, id="i1"))])
    graph = react_agent(model, [ask_human], name="desk", checkpointer=InMemorySaver())
    record, _ = run(graph, tracer)
    (c,) = record
    assert c.outcome is Outcome.INTERRUPTED
    assert [i.value for i in record.pending] == ["ok?"]


def test_interruptions_round_trip_through_the_trace_file_redacted(tmp_path):
    path = tmp_path / "traces.jsonl"
    with RunTelemetry(trace_file=path) as tel:
        live, _ = run(approval_graph(), tel.tracer, {"approve": True, "password": "pw"})
    text = path.read_text()
    assert "tok-123" not in text and '"pw"' not in text and REDACTED in text
    back = read_records(path)["q"]
    assert [i.node for i in back.interruptions] == ["approve", "approve"]
    assert back.interruptions[0].value["api_token"] == REDACTED
    assert back.interruptions[0].value["question"] == "approve refund?"
    assert [(i.seq, i.calls_before, i.resumed, i.interrupt_id) for i in back.interruptions] == [
        (i.seq, i.calls_before, i.resumed, i.interrupt_id) for i in live.interruptions
    ]


def test_an_interrupt_inside_a_subgraph_is_one_pause_named_by_its_own_node(spans):
    tracer, _ = spans
    model = ScriptedChatModel(
        script=[call(tool_call("ask_human", {"question": "ok?"}, id="s1")), say("sub done")]
    )
    inner = react_agent(model, [ask_human], name="helper")  # no checkpointer: the parent's
    builder = StateGraph(MessagesState)
    builder.add_node("delegate", inner)
    builder.add_edge(START, "delegate")
    builder.add_edge("delegate", END)
    graph = builder.compile(name="desk", checkpointer=InMemorySaver())
    record, state = run(graph, tracer, "fine")
    (asked,) = record.interruptions  # seen by the subgraph and by its parent: one pause
    assert (asked.node, asked.tool, asked.agent, asked.depth) == ("tools", "ask_human", "helper", 1)
    assert (asked.resumed, asked.resume_value) == (True, "fine")
    assert state["messages"][-1].text == "sub done"
