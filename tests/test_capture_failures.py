"""Failure classes become outcomes (never parsed from text), and a broken recorder marks its
record incomplete instead of letting "tool X was not called" pass."""

from __future__ import annotations

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import boom, fetch, flaky, lookup, react_agent, set_flag
from tracegrade import Outcome, Recorder, ToolRecord


def recorder(tracer, name="desk") -> Recorder:
    return Recorder(tracer=tracer, question_id="q", dataset="ds", target="t", agent_name=name)


def run(tracer, turns, tools, **graph_options):
    graph = react_agent(ScriptedChatModel(script=turns), tools, name="desk", **graph_options)
    rec = recorder(tracer)
    error = None
    state = None
    try:
        with rec.question_span():
            state = graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    except Exception as exc:
        error = exc
    return rec, rec.seal(state), state, error


def by_id(record: ToolRecord):
    return {c.call_id: c for c in record}


def test_raising_tool_handled_by_the_tool_node(spans):
    tracer, exporter = spans
    turns = [call(tool_call("boom", {"reason": "x"}, id="b1")), say("sorry")]
    _, record, state, error = run(tracer, turns, [boom], handle_tool_errors=True)
    assert error is None
    assert state["messages"][-1].text == "sorry"
    (c,) = record
    assert (c.outcome, c.error_type, c.result) == (Outcome.ERROR, "ValueError", None)
    span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool boom")
    assert span.attributes["error.type"] == "ValueError"
    assert span.status.status_code.name == "ERROR"


def test_raising_tool_unhandled_fails_the_run_but_is_recorded(spans):
    tracer, _ = spans
    turns = [call(tool_call("boom", {"reason": "x"}, id="b1")), say("unreached")]
    _rec, record, _, error = run(tracer, turns, [boom], handle_tool_errors=False)
    assert isinstance(error, ValueError)
    (c,) = record
    assert (c.outcome, c.error_type) == (Outcome.ERROR, "ValueError")
    assert record.complete  # the run failed, the capture did not


def test_argument_validation_failure(spans):
    tracer, _ = spans
    turns = [call(tool_call("lookup", {"wrong": 1}, id="v1")), say("ok")]
    _, record, _state, error = run(tracer, turns, [lookup])  # default handler covers validation
    assert error is None
    (c,) = record
    assert (c.outcome, c.error_type) == (Outcome.ERROR, "ValidationError")
    assert c.arguments == {"wrong": 1}  # as the model emitted them, whole


def test_tool_message_with_status_error(spans):
    tracer, _ = spans
    turns = [call(tool_call("flaky", {"x": "y"}, id="f1")), say("ok")]
    _, record, _, _ = run(tracer, turns, [flaky])
    (c,) = record
    assert (c.outcome, c.error_type, c.result) == (
        Outcome.ERROR,
        "ToolMessageError",
        "could not handle y",
    )


def test_unknown_tool_is_reconciled_as_not_executed(spans):
    tracer, exporter = spans
    turns = [
        call(
            tool_call("lookup", {"q": "a"}, id="k1"), tool_call("no_such_tool", {"z": 1}, id="u1")
        ),
        say("ok"),
    ]
    _rec, record, _state, _ = run(tracer, turns, [lookup])
    calls = by_id(record)
    assert calls["k1"].outcome is Outcome.OK
    unknown = calls["u1"]
    assert unknown.outcome is Outcome.NOT_EXECUTED
    assert (unknown.name, unknown.arguments, unknown.agent) == ("no_such_tool", {"z": 1}, "desk")
    assert (unknown.model_turn, unknown.index_in_turn) == (0, 1)
    assert "not a valid tool" in unknown.result
    span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool no_such_tool")
    assert span.attributes["tracegrade.tool.outcome"] == "not_executed"
    assert span.parent is not None


def test_unknown_tool_reconciled_from_final_state_alone(spans):
    """A recorder that saw only the model (no node outputs) still reconciles at seal."""
    tracer, _ = spans
    graph = react_agent(
        ScriptedChatModel(script=[call(tool_call("ghost", {}, id="g1")), say("ok")]),
        [lookup],
        name="desk",
    )
    state = graph.invoke({"messages": [("user", "hi")]})  # no recorder attached
    rec = recorder(tracer)
    with rec.question_span():
        pass
    (c,) = rec.seal(state)
    assert (c.name, c.outcome, c.call_id) == ("ghost", Outcome.NOT_EXECUTED, "g1")


def test_tool_returning_command(spans):
    tracer, _ = spans
    turns = [call(tool_call("set_flag", {"flag": "on"}, id="s1")), say("ok")]
    _, record, _state, _ = run(tracer, turns, [set_flag])
    (c,) = record
    assert c.outcome is Outcome.COMMAND
    assert c.result == {"update": {"messages": ["flag on set"]}}


def test_empty_record_is_present_and_complete(spans):
    tracer, _ = spans
    rec, record, _, _ = run(tracer, [say("no tools needed")], [lookup])
    # present and empty: the agent ran and called nothing (its path through the graph and the
    # tools it was offered are recorded beside the calls)
    assert record is not None and len(record) == 0 and list(record) == list(ToolRecord([]))
    assert record.complete
    assert rec.trace_id is not None


def test_recorder_failure_marks_the_record_incomplete(spans, monkeypatch, caplog):
    tracer, exporter = spans
    graph = react_agent(
        ScriptedChatModel(script=[call(tool_call("lookup", {"q": "a"}, id="x1")), say("ok")]),
        [lookup],
        name="desk",
    )
    rec = recorder(tracer)

    def broken(*args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(rec, "_tool_span", broken)
    with rec.question_span():
        state = graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    assert state["messages"][-1].text == "ok"  # the run itself is untouched
    record = rec.seal(state)
    assert not record.complete
    assert len(record) == 0  # the call went unseen: an incomplete record is never evidence
    assert any("on_tool_start" in p and "injected" in p for p in record.problems)
    assert rec.problems == list(record.problems)
    assert "capture failure" in caplog.text
    question = next(s for s in exporter.get_finished_spans() if s.name == "tracegrade.question")
    assert question.attributes["tracegrade.record.complete"] is False


async def test_async_and_sync_tools_in_one_async_run(spans):
    tracer, _ = spans
    graph = react_agent(
        ScriptedChatModel(
            script=[
                call(
                    tool_call("fetch", {"url": "u"}, id="a1"),
                    tool_call("lookup", {"q": "s"}, id="s1"),
                ),
                say("ok"),
            ]
        ),
        [fetch, lookup],
        name="desk",
    )
    rec = recorder(tracer)
    async with rec.question_span():
        state = await graph.ainvoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    calls = by_id(rec.seal(state))
    assert calls["a1"].result == "page at u" and calls["s1"].result == "found s"
    assert {c.outcome for c in calls.values()} == {Outcome.OK}
