"""Abandoned streams and cancelled tasks close their spans (outcome cancelled); many concurrent
runs in one process never leak calls into each other's records."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.tools import tool

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import fetch, lookup, react_agent, stall
from tracegrade import Outcome, Recorder


def recorder(tracer, qid="q") -> Recorder:
    return Recorder(tracer=tracer, question_id=qid, dataset="ds", target="t", agent_name="desk")


def stalling_graph():
    model = ScriptedChatModel(
        script=[call(tool_call("stall", {"seconds": 30}, id="s1")), say("unreached")]
    )
    return react_agent(model, [stall], name="desk")


def assert_all_closed(exporter, record):
    (c,) = record
    assert c.outcome is Outcome.CANCELLED and c.end_ns >= c.start_ns > 0
    names = [s.name for s in exporter.get_finished_spans()]
    for expected in ("tracegrade.question", "invoke_agent desk", "execute_tool stall"):
        assert expected in names
    tool_span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool stall")
    assert tool_span.attributes["tracegrade.tool.outcome"] == "cancelled"
    assert tool_span.status.status_code.name == "ERROR"


async def test_abandoned_stream_closes_spans_as_cancelled(spans):
    tracer, exporter = spans
    rec = recorder(tracer)
    stream = stalling_graph().astream(
        {"messages": [("user", "hi")]}, {"callbacks": [rec]}, stream_mode="custom"
    )
    async with rec.question_span():
        async for chunk in stream:
            assert chunk == {"started": "stall"}
            break  # the consumer walks away while the tool is running
    record = rec.seal()
    await stream.aclose()  # late callbacks after the seal change nothing
    assert rec.seal() is record
    assert_all_closed(exporter, record)


async def test_cancelled_task_closes_spans_as_cancelled(spans):
    tracer, exporter = spans
    rec = recorder(tracer)
    started = asyncio.Event()

    async def run():
        async with rec.question_span():
            async for _ in stalling_graph().astream(
                {"messages": [("user", "hi")]}, {"callbacks": [rec]}, stream_mode="custom"
            ):
                started.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = rec.seal()
    assert_all_closed(exporter, record)
    question = next(s for s in exporter.get_finished_spans() if s.name == "tracegrade.question")
    assert question.attributes["error.type"] == "CancelledError"


@tool
def echo(tag: str) -> str:
    """Echo a tag (sync: runs in LangGraph's thread pool)."""
    return f"echo {tag}"


async def test_fifty_concurrent_runs_have_no_cross_talk(spans):
    tracer, _ = spans
    n = 50
    script = {
        f"question {i}": [
            call(
                tool_call("echo", {"tag": f"t{i}"}, id=f"e{i}"),
                tool_call("fetch", {"url": f"u{i}"}, id=f"f{i}"),
            ),
            call(tool_call("lookup", {"q": f"q{i}"}, id=f"l{i}")),
            say(f"answer {i}"),
        ]
        for i in range(n)
    }
    graph = react_agent(
        ScriptedChatModel(script=script, latency_s=0.002), [echo, fetch, lookup], name="desk"
    )

    async def one(i):
        rec = recorder(tracer, f"q{i}")
        async with rec.question_span():
            state = await graph.ainvoke(
                {"messages": [("user", f"question {i}")]}, {"callbacks": [rec]}
            )
        return rec, rec.seal(state), state

    results = await asyncio.gather(*(one(i) for i in range(n)))
    trace_ids = set()
    for i, (rec, record, state) in enumerate(results):
        assert state["messages"][-1].text == f"answer {i}"
        assert record.complete
        assert {c.call_id: c.arguments for c in record} == {
            f"e{i}": {"tag": f"t{i}"},
            f"f{i}": {"url": f"u{i}"},
            f"l{i}": {"q": f"q{i}"},
        }
        assert {c.trace_id for c in record} == {rec.trace_id}
        assert [c.call_id for c in record.requested_order()] == [f"e{i}", f"f{i}", f"l{i}"]
        trace_ids.add(rec.trace_id)
    assert len(trace_ids) == n
