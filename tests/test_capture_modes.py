"""The recorder captures the same record however the graph is driven: invoke, ainvoke, stream and
astream in every mode, astream_events; parallel calls in one model message; sync and async tools.
"""

from __future__ import annotations

import pytest

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import fetch, lookup, react_agent
from tracegrade import Outcome, Recorder

STREAM_MODES = ["values", "updates", "messages", "debug", "custom", "checkpoints", "tasks"]


def script():
    """Turn 0: two parallel calls (sync lookup, async fetch); turn 1: one lookup; then answer."""
    return [
        call(
            tool_call("lookup", {"q": "alpha"}, id="c1"),
            tool_call("fetch", {"url": "http://x"}, id="c2"),
        ),
        call(tool_call("lookup", {"q": "beta"}, id="c3")),
        say("done"),
    ]


def graph():
    return react_agent(ScriptedChatModel(script=script()), [lookup, fetch], name="desk")


def recorder(tracer) -> Recorder:
    return Recorder(tracer=tracer, question_id="q1", dataset="ds", target="t", agent_name="desk")


def check(record, final_state=None):
    assert record.complete and record.problems == ()
    by_id = {c.call_id: c for c in record}
    assert set(by_id) == {"c1", "c2", "c3"}
    assert by_id["c1"].arguments == {"q": "alpha"} and by_id["c1"].result == "found alpha"
    assert by_id["c2"].result == "page at http://x"
    assert all(c.outcome is Outcome.OK for c in record)
    assert all(c.agent == "desk" and c.depth == 0 for c in record)
    assert by_id["c1"].qualified_id == "desk:lookup"
    assert [(c.model_turn, c.index_in_turn) for c in (by_id["c1"], by_id["c2"], by_id["c3"])] == [
        (0, 0),
        (0, 1),
        (1, 0),
    ]
    assert [c.call_id for c in record.requested_order()] == ["c1", "c2", "c3"]
    # Parallel calls start in no fixed order, but seq numbers them 0..n-1 in start order.
    assert sorted(c.seq for c in record) == [0, 1, 2]
    assert by_id["c3"].seq == 2
    assert all(c.end_ns >= c.start_ns > 0 for c in record)


def test_invoke(spans):
    tracer, exporter = spans
    rec = recorder(tracer)
    with rec.question_span():
        state = graph().invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    check(rec.seal(state))
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == sorted(
        ["tracegrade.question", "invoke_agent desk"]
        + ["chat scripted"] * 3
        + ["execute_tool lookup"] * 2
        + ["execute_tool fetch"]
    )


async def test_ainvoke(spans):
    tracer, _ = spans
    rec = recorder(tracer)
    async with rec.question_span():
        state = await graph().ainvoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    check(rec.seal(state))


@pytest.mark.parametrize("mode", [*STREAM_MODES, ["updates", "messages"]])
def test_stream(spans, mode):
    tracer, _ = spans
    rec = recorder(tracer)
    with rec.question_span():
        chunks = list(
            graph().stream({"messages": [("user", "hi")]}, {"callbacks": [rec]}, stream_mode=mode)
        )
    assert chunks or mode in ("custom", "checkpoints")  # no writer, no checkpointer
    check(rec.seal())


@pytest.mark.parametrize("mode", [*STREAM_MODES, ["values", "debug"]])
async def test_astream(spans, mode):
    tracer, _ = spans
    rec = recorder(tracer)
    async with rec.question_span():
        chunks = [
            c
            async for c in graph().astream(
                {"messages": [("user", "hi")]}, {"callbacks": [rec]}, stream_mode=mode
            )
        ]
    assert chunks or mode in ("custom", "checkpoints")  # no writer, no checkpointer
    check(rec.seal())


async def test_astream_events(spans):
    tracer, _ = spans
    rec = recorder(tracer)
    async with rec.question_span():
        events = [
            e
            async for e in graph().astream_events(
                {"messages": [("user", "hi")]}, {"callbacks": [rec]}, version="v2"
            )
        ]
    assert any(e["event"] == "on_tool_end" for e in events)
    check(rec.seal())


def test_spans_nest_under_the_question_and_carry_genai_and_openinference_names(spans):
    tracer, exporter = spans
    rec = recorder(tracer)
    with rec.question_span():
        graph().invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    record = rec.seal()
    finished = {s.name: s for s in exporter.get_finished_spans()}
    question = finished["tracegrade.question"]
    agent = finished["invoke_agent desk"]
    assert question.attributes["tracegrade.question.id"] == "q1"
    assert question.attributes["tracegrade.dataset"] == "ds"
    assert agent.parent.span_id == question.context.span_id
    tools = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert all(s.parent.span_id == agent.context.span_id for s in tools)
    first = next(s for s in tools if s.attributes["gen_ai.tool.call.id"] == "c1")
    assert first.attributes["gen_ai.operation.name"] == "execute_tool"
    assert first.attributes["gen_ai.tool.name"] == "lookup"
    assert first.attributes["gen_ai.tool.call.arguments"] == '{"q": "alpha"}'
    assert first.attributes["gen_ai.tool.call.result"] == "found alpha"
    assert first.attributes["openinference.span.kind"] == "TOOL"
    assert first.attributes["tool.name"] == "lookup"
    assert first.attributes["input.value"] == '{"q": "alpha"}'
    assert first.attributes["output.value"] == "found alpha"
    call = next(c for c in record if c.call_id == "c1")
    assert call.span_id == format(first.context.span_id, "016x")
    assert call.trace_id == rec.trace_id == format(question.context.trace_id, "032x")
    assert finished["chat scripted"].attributes["gen_ai.usage.input_tokens"] == 10


def test_seal_is_idempotent(spans):
    tracer, _ = spans
    rec = recorder(tracer)
    with rec.question_span():
        state = graph().invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    first = rec.seal(state)
    assert rec.seal(state) is first
    assert rec.seal() is first
