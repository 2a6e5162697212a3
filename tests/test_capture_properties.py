"""Properties of the record over large input spaces: de-duplication does not depend on the order
calls are handed in, and any JSON arguments/results survive the trace file unchanged."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracegrade import Outcome, Recorder, ToolCall, read_records
from tracegrade.capture.tracefile import TraceFileExporter
from tracegrade.records import finalize_calls
from tracegrade.redaction import is_secret_name, redact_text

safe_text = st.text(max_size=30).filter(lambda s: redact_text(s) == s)
safe_key = st.text(max_size=10).filter(lambda k: not is_secret_name(k) and redact_text(k) == k)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | safe_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_key, inner, max_size=3),
    max_leaves=8,
)


def make_call(seq: int, call_id: str | None, agent: str, outcome: Outcome) -> ToolCall:
    return ToolCall(
        seq=seq,
        name="t",
        qualified_id=f"{agent}:t",
        call_id=call_id,
        arguments={"seq": seq},
        outcome=outcome,
        agent=agent,
        start_ns=1000 + seq,
        end_ns=2000 + seq,
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "a", "b", "c"]),
            st.sampled_from(["x", "y"]),
            st.sampled_from(list(Outcome)),
        ),
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_finalize_is_order_independent_and_keeps_the_last_run(raw, rnd):
    calls = [make_call(i, cid, agent, outcome) for i, (cid, agent, outcome) in enumerate(raw)]
    shuffled = list(calls)
    rnd.shuffle(shuffled)
    final = finalize_calls(shuffled)
    assert final == finalize_calls(calls)
    assert [c.seq for c in final] == list(range(len(final)))
    keys = [(c.agent, c.call_id) for c in calls if c.call_id]
    assert len(final) == len(set(keys)) + sum(1 for c in calls if not c.call_id)
    for agent, call_id in set(keys):
        last = max(
            (c for c in calls if (c.agent, c.call_id) == (agent, call_id)), key=lambda c: c.seq
        )
        (kept,) = [c for c in final if (c.agent, c.call_id) == (agent, call_id)]
        assert kept.arguments == last.arguments and kept.outcome == last.outcome


def drive(rec: Recorder, tool_calls: list[dict], results: list) -> None:
    """Feed the recorder the callbacks of one model turn and its tool calls, as LangGraph
    would: graph run, model task with a chat model, tools task with each tool."""
    root, model_task, llm, tools_task = (uuid.uuid4() for _ in range(4))
    rec.on_chain_start({}, {}, run_id=root, parent_run_id=None, name="g")
    rec.on_chain_start({}, {}, run_id=model_task, parent_run_id=root, tags=["graph:step:1"])
    rec.on_chat_model_start({}, [[]], run_id=llm, parent_run_id=model_task, metadata={})
    message = AIMessage(content="", tool_calls=tool_calls)
    rec.on_llm_end(LLMResult(generations=[[ChatGeneration(message=message)]]), run_id=llm)
    rec.on_chain_end({"messages": [message]}, run_id=model_task)
    rec.on_chain_start({}, {}, run_id=tools_task, parent_run_id=root, tags=["graph:step:2"])
    for tc, result in zip(tool_calls, results, strict=True):
        run = uuid.uuid4()
        rec.on_tool_start(
            {"name": tc["name"]},
            json.dumps(tc["args"]),
            run_id=run,
            parent_run_id=tools_task,
            inputs=tc["args"],
            tool_call_id=tc["id"],
        )
        rec.on_tool_end(result, run_id=run)
    rec.on_chain_end({}, run_id=tools_task)
    rec.on_chain_end({}, run_id=root)


@settings(
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    arguments=st.lists(st.dictionaries(safe_key, json_values, max_size=4), min_size=1, max_size=3),
    results=st.lists(json_values, min_size=3, max_size=3),
)
def test_any_json_arguments_and_results_round_trip_through_the_trace_file(
    tmp_path_factory, arguments, results
):
    path = tmp_path_factory.mktemp("rt") / "t.jsonl"
    exporter = TraceFileExporter(path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rec = Recorder(
        tracer=provider.get_tracer("p"), question_id="q", dataset="d", target="t", agent_name="g"
    )
    tool_calls = [
        {"name": f"tool{i}", "args": args, "id": f"id{i}", "type": "tool_call"}
        for i, args in enumerate(arguments)
    ]
    with rec.question_span():
        drive(rec, tool_calls, results[: len(tool_calls)])
    live = rec.seal()
    provider.shutdown()
    assert [c.arguments for c in live] == arguments
    assert read_records(path)["q"] == live


class _ListState(list):
    """A list subclass, as a custom reducer might return."""


class _MappingState(Mapping):
    """A state that is a Mapping without being a dict (a custom state class)."""

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@given(st.lists(st.sampled_from(["ai", "tool"]), max_size=4))
def test_the_messages_of_every_state_shape_are_found(kinds):
    """Error ToolMessages are reconciled from whatever shape a task returned its messages in:
    exact dicts and lists take a fast path, and subclasses, other Mappings, tuples and Commands
    must find the same messages (a call missed here is a call missing from the record)."""
    from langchain_core.messages import ToolMessage
    from langgraph.types import Command

    from tracegrade.capture.reconcile import messages_in

    messages = [
        AIMessage(content=f"m{i}") if k == "ai" else ToolMessage(f"r{i}", tool_call_id=f"c{i}")
        for i, k in enumerate(kinds)
    ]
    shapes = [
        {"messages": messages},
        messages,
        _ListState(messages),
        tuple(messages),
        _MappingState({"messages": messages}),
        Command(update={"messages": messages}),
        [Command(update={"messages": messages[:1]}), {"messages": messages[1:]}],
        {"messages": _ListState(messages)},
    ]
    for shape in shapes:
        assert messages_in(shape) == messages, shape
    for nothing in ({}, {"other": 1}, None, "text", 3, [1, "x"]):
        assert messages_in(nothing) == []
