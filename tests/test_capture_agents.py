"""Sub-agents, subgraphs, handoffs, interrupts and threads: calls are attributed to the (sub)graph
that ran them, counted as calls of the question, and de-duplicated across interrupt/resume."""

from __future__ import annotations

import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import (
    ask_human,
    delegating_tool,
    handoff_to_finish,
    lookup,
    react_agent,
    supervisor_with_subgraph,
    threaded_tool,
)
from tracegrade import Outcome, Recorder, ToolRecord


def recorder(tracer, name) -> Recorder:
    return Recorder(tracer=tracer, question_id="q", dataset="ds", target="t", agent_name=name)


def researcher(turns):
    return react_agent(ScriptedChatModel(script=turns), [lookup], name="researcher")


def by_id(record):
    return {c.call_id: c for c in record}


def test_subgraph_as_a_node(spans):
    tracer, exporter = spans
    # The subgraph shares the parent's messages: its model sees two AI messages already.
    sub = researcher(
        [say(""), say(""), call(tool_call("lookup", {"q": "deep"}, id="r1")), say("sub done")]
    )
    parent = supervisor_with_subgraph(
        ScriptedChatModel(script=[call(tool_call("lookup", {"q": "top"}, id="t1")), say("go")]),
        sub,
    )
    rec = recorder(tracer, "supervisor")
    with rec.question_span():
        state = parent.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    calls = by_id(rec.seal(state))
    assert (calls["t1"].qualified_id, calls["t1"].depth) == ("supervisor:lookup", 0)
    assert (calls["r1"].qualified_id, calls["r1"].agent, calls["r1"].depth) == (
        "researcher:lookup",
        "researcher",
        1,
    )
    assert calls["r1"].model_turn == 0  # the researcher's own first model message
    finished = {s.name: s for s in exporter.get_finished_spans()}
    sub_span = finished["invoke_agent researcher"]
    top_span = finished["invoke_agent supervisor"]
    assert sub_span.parent.span_id == top_span.context.span_id
    assert sub_span.attributes["tracegrade.depth"] == 1
    r1 = next(
        s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.tool.call.id") == "r1"
    )
    assert r1.parent.span_id == sub_span.context.span_id


@pytest.mark.parametrize("use_async", [False, True])
async def test_sub_agent_invoked_inside_a_tool(spans, use_async):
    tracer, exporter = spans
    sub = researcher([call(tool_call("lookup", {"q": "inner"}, id="r1")), say("inner answer")])
    boss = react_agent(
        ScriptedChatModel(
            script=[
                call(tool_call("delegate", {"task": "dig"}, id="d1")),
                call(tool_call("lookup", {"q": "after"}, id="t2")),
                say("done"),
            ]
        ),
        [delegating_tool(sub), lookup],
        name="boss",
    )
    rec = recorder(tracer, "boss")
    inputs = {"messages": [("user", "hi")]}
    if use_async:
        async with rec.question_span():
            state = await boss.ainvoke(inputs, {"callbacks": [rec]})
    else:
        with rec.question_span():
            state = boss.invoke(inputs, {"callbacks": [rec]})
    record = rec.seal(state)
    calls = by_id(record)
    assert set(calls) == {"d1", "r1", "t2"}
    assert calls["d1"].result == "inner answer"
    assert (calls["r1"].qualified_id, calls["r1"].depth) == ("researcher:lookup", 1)
    assert [c.call_id for c in record] == ["d1", "r1", "t2"]  # start order
    # `after` semantics: same agent compares model turns; across agents, span times.
    assert ToolRecord.happened_before(calls["d1"], calls["t2"])
    assert not ToolRecord.happened_before(calls["t2"], calls["d1"])
    assert ToolRecord.happened_before(calls["r1"], calls["t2"])
    assert not ToolRecord.happened_before(calls["d1"], calls["r1"])  # d1 was still running
    sub_span = next(s for s in exporter.get_finished_spans() if s.name == "invoke_agent researcher")
    delegate_span = next(
        s for s in exporter.get_finished_spans() if s.name == "execute_tool delegate"
    )
    assert sub_span.parent.span_id == delegate_span.context.span_id


@pytest.mark.parametrize("pass_config", [True, False])
def test_tool_starting_its_own_thread(spans, pass_config):
    """Passing the RunnableConfig on keeps the sub-agent's calls; not passing it loses them."""
    tracer, _ = spans
    sub = researcher([call(tool_call("lookup", {"q": "bg"}, id="r1")), say("bg answer")])
    boss = react_agent(
        ScriptedChatModel(
            script=[call(tool_call("background", {"task": "t"}, id="b1")), say("ok")]
        ),
        [threaded_tool(sub, pass_config=pass_config)],
        name="boss",
    )
    rec = recorder(tracer, "boss")
    with rec.question_span():
        state = boss.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    calls = by_id(rec.seal(state))
    assert calls["b1"].result == "bg answer"
    if pass_config:
        assert set(calls) == {"b1", "r1"} and calls["r1"].qualified_id == "researcher:lookup"
    else:
        assert set(calls) == {"b1"}  # the thread's calls never reached the recorder


def test_handoff_to_the_parent(spans):
    tracer, _ = spans
    sub = react_agent(
        ScriptedChatModel(
            script=[say(""), call(tool_call("handoff_to_finish", {"note": "n"}, id="h1"))]
        ),
        [handoff_to_finish],
        name="researcher",
    )
    parent = supervisor_with_subgraph(ScriptedChatModel(script=[say("go")]), sub)
    rec = recorder(tracer, "supervisor")
    with rec.question_span():
        state = parent.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    (c,) = rec.seal(state)
    assert (c.outcome, c.agent, c.depth) == (Outcome.HANDOFF, "researcher", 1)
    assert c.result["goto"] == "finish"
    assert state["messages"][-1].text == "handing off: n"


def interrupting_graph():
    model = ScriptedChatModel(
        script=[call(tool_call("ask_human", {"question": "ok?"}, id="i1")), say("done")]
    )
    return react_agent(model, [ask_human], name="desk", checkpointer=InMemorySaver())


def test_interrupt_without_resume_is_recorded_as_interrupted(spans):
    tracer, _ = spans
    graph = interrupting_graph()
    rec = recorder(tracer, "desk")
    config = {"callbacks": [rec], "configurable": {"thread_id": "a"}}
    with rec.question_span():
        state = graph.invoke({"messages": [("user", "hi")]}, config)
    assert state["__interrupt__"]
    (c,) = rec.seal(state)
    assert (c.outcome, c.error_type, c.call_id) == (Outcome.INTERRUPTED, None, "i1")


async def test_interrupt_and_resume_deduplicates_the_call_id(spans):
    tracer, exporter = spans
    graph = interrupting_graph()
    rec = recorder(tracer, "desk")
    config = {"callbacks": [rec], "configurable": {"thread_id": "b"}}
    async with rec.question_span():
        await graph.ainvoke({"messages": [("user", "hi")]}, config)
        state = await graph.ainvoke(Command(resume="yes"), config)
    record = rec.seal(state)
    (c,) = record  # the same call id ran twice: one call, the last outcome wins
    assert (c.outcome, c.result, c.seq, c.model_turn) == (Outcome.OK, "human said yes", 0, 0)
    tool_spans = [s for s in exporter.get_finished_spans() if s.name == "execute_tool ask_human"]
    assert len(tool_spans) == 2  # both runs are in the trace
    assert c.span_id == format(tool_spans[-1].context.span_id, "016x")


def test_agent_spans_carry_their_conversation_in_the_genai_form(spans):
    # Trace-based evaluators pair a trace with its case by the user text of the agent span's
    # gen_ai.input.messages; a sub-agent's span carries what it was handed and what it said.
    tracer, exporter = spans
    sub = researcher([call(tool_call("lookup", {"q": "deep"}, id="r1")), say("sub done")])
    parent = supervisor_with_subgraph(ScriptedChatModel(script=[say("go")]), sub)
    rec = recorder(tracer, "supervisor")
    with rec.question_span():
        state = parent.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    rec.seal(state)
    finished = {s.name: s for s in exporter.get_finished_spans()}
    top, sub_span = finished["invoke_agent supervisor"], finished["invoke_agent researcher"]
    assert json.loads(top.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    # one question run: a recorder outside a harness run gets a run id of its own
    assert top.attributes["gen_ai.conversation.id"] == rec.conversation_id
    assert rec.conversation_id.startswith("adhoc-") and rec.conversation_id.endswith("/t/q/0")
    assert sub_span.attributes["gen_ai.conversation.id"] == rec.conversation_id
    handed = json.loads(sub_span.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in handed] == ["user", "assistant"]  # the question, then "go"
    said = json.loads(sub_span.attributes["gen_ai.output.messages"])
    assert said == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "sub done"}],
            "finish_reason": "stop",
        }
    ]
    # tool calls and their answers appear as parts, not as text
    top_out = json.loads(top.attributes["gen_ai.output.messages"])
    assert top_out[0]["role"] == "assistant"


def test_genai_messages_render_tool_calls_and_answers_as_parts():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from tracegrade.capture.reconcile import genai_messages

    messages = [
        SystemMessage("be brief"),
        HumanMessage("cancel B100"),
        AIMessage("", tool_calls=[tool_call("cancel", {"booking_id": "B100"}, id="c1")]),
        ToolMessage("no such booking", tool_call_id="c1", status="error"),
        AIMessage("It could not be cancelled."),
    ]
    assert genai_messages({"messages": messages}) == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "cancel B100"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "cancel",
                    "arguments": {"booking_id": "B100"},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": "no such booking"}],
        },
        {"role": "assistant", "parts": [{"type": "text", "content": "It could not be cancelled."}]},
    ]
    assert genai_messages(messages, output=True) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "It could not be cancelled."}],
            "finish_reason": "stop",
        }
    ]
    assert genai_messages([("user", "hi"), {"role": "assistant", "content": "yo"}]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "yo"}]},
    ]
