"""The run's local trace file: OTLP JSON lines, whole except secrets, read back into the same
records the live recorder sealed (so re-grading sees what grading saw)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import (
    ask_human,
    boom,
    delegating_tool,
    fetch,
    flaky,
    lookup,
    react_agent,
    set_flag,
)
from tracegrade import InputError, Outcome, Recorder, RunTelemetry, read_records
from tracegrade.capture import recorder as recorder_module
from tracegrade.capture.tracefile import (
    QuestionRunKey,
    encode_line,
    encode_spans,
    read_question_runs,
    redacted_attributes,
)
from tracegrade.redaction import REDACTED, redact_text


@tool
def login(user: str, api_token: str, note: str) -> dict:
    """Log in (takes a secret)."""
    return {"user": user, "session_token": "s3cr3t-session", "ok": True}


def sub_agent():
    model = ScriptedChatModel(script=[call(tool_call("lookup", {"q": "in"}, id="r1")), say("sub")])
    return react_agent(model, [lookup], name="researcher")


def busy_graph():
    turns = [
        call(
            tool_call("lookup", {"q": "a", "n": [1, 2.5, None]}, id="c1"),
            tool_call("boom", {"reason": "x"}, id="c2"),
            tool_call("flaky", {"x": "y"}, id="c3"),
            tool_call("ghost", {"k": {"nested": True}}, id="c4"),
        ),
        call(
            tool_call("set_flag", {"flag": "f"}, id="c5"),
            tool_call("delegate", {"task": "t"}, id="c6"),
        ),
        call(tool_call("ask_human", {"question": "sure?"}, id="c7")),
        say("done"),
    ]
    tools = [lookup, boom, flaky, set_flag, delegating_tool(sub_agent()), ask_human, fetch]
    return react_agent(
        ScriptedChatModel(script=turns),
        tools,
        name="desk",
        handle_tool_errors=True,
        checkpointer=InMemorySaver(),
    )


def run_question(tel, graph, qid, inputs, *, resume=None):
    rec = Recorder(tracer=tel.tracer, question_id=qid, dataset="ds", target="t", agent_name="desk")
    config = {"callbacks": [rec], "configurable": {"thread_id": qid}}
    with rec.question_span():
        state = graph.invoke(inputs, config)
        if resume is not None:
            state = graph.invoke(Command(resume=resume), config)
    return rec.seal(state)


def test_trace_file_round_trips_into_the_same_records(tmp_path):
    path = tmp_path / "run" / "traces.jsonl"
    with RunTelemetry(trace_file=path) as tel:
        busy = run_question(tel, busy_graph(), "busy", {"messages": [("user", "go")]}, resume="yes")
        quiet_graph = react_agent(ScriptedChatModel(script=[say("nothing to do")]), [lookup])
        quiet = run_question(tel, quiet_graph, "quiet", {"messages": [("user", "hi")]})
    outcomes = {c.call_id: c.outcome for c in busy}
    assert outcomes == {
        "c1": Outcome.OK,
        "c2": Outcome.ERROR,
        "c3": Outcome.ERROR,
        "c4": Outcome.NOT_EXECUTED,
        "c5": Outcome.COMMAND,
        "c6": Outcome.OK,
        "r1": Outcome.OK,
        "c7": Outcome.OK,  # interrupted, then resumed: the last outcome wins
    }
    records = read_records(path)
    assert set(records) == {"busy", "quiet"}
    assert records["busy"] == busy
    assert list(records["busy"]) == list(busy)  # field by field, results and span ids included
    # Empty and absent stay different facts.
    assert len(records["quiet"]) == 0 and records["quiet"].complete and quiet == records["quiet"]
    assert records.get("never-ran") is None
    # Every line is one OTLP/JSON ExportTraceServiceRequest with hex ids.
    for line in path.read_text().splitlines():
        request = json.loads(line)
        span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16


def test_trace_file_redacts_secrets_and_keeps_everything_else_whole(tmp_path):
    path = tmp_path / "traces.jsonl"
    long_note = "n" * 10_000
    bearer = "Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    turns = [
        call(
            tool_call(
                "login",
                {
                    "user": "ann",
                    "api_token": "tok-123-very-secret",
                    "note": long_note + " " + bearer,
                },
                id="l1",
            )
        ),
        say("in"),
    ]
    with RunTelemetry(trace_file=path) as tel:
        graph = react_agent(ScriptedChatModel(script=turns), [login], name="desk")
        live = run_question(tel, graph, "q", {"messages": [("user", "hi")]})
    assert live[0].arguments["api_token"] == "tok-123-very-secret"  # in-process: whole
    text = path.read_text()
    for secret in ("tok-123-very-secret", "abcdefghijklmnopqrstuvwxyz0123456789", "s3cr3t-session"):
        assert secret not in text
    (back,) = read_records(path)["q"]
    assert back.arguments["api_token"] == REDACTED
    assert back.arguments["note"] == long_note + " " + REDACTED  # no truncation on disk
    assert json.loads(back.result) == {"user": "ann", "session_token": REDACTED, "ok": True}


def test_incomplete_record_reads_back_incomplete(tmp_path, monkeypatch):
    path = tmp_path / "traces.jsonl"
    with RunTelemetry(trace_file=path) as tel:
        graph = react_agent(
            ScriptedChatModel(script=[call(("lookup", {"q": "a"})), say("ok")]), [lookup]
        )
        rec = Recorder(tracer=tel.tracer, question_id="q", dataset="d", target="t", agent_name="a")
        monkeypatch.setattr(recorder_module, "finish_tool", lambda *a, **k: 1 / 0)
        with rec.question_span():
            graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
        live = rec.seal()
    assert not live.complete
    back = read_records(path)["q"]
    # Problems found after the question span ended (here: at seal) exist only in memory.
    assert not back.complete and back.problems and set(back.problems) <= set(live.problems)
    assert any("ZeroDivisionError" in p for p in back.problems)


def test_a_broken_line_is_skipped_and_named(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text('{"resourceSpans": []}\nnot json\n')
    unreadable: list[str] = []
    assert read_records(path, unreadable=unreadable) == {}
    assert unreadable == [f"{path}:2: not an OTLP JSON line; skipped"]


# -- the direct line encoder ----------------------------------------------------------------
def _ref_value(value) -> dict:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return {"intValue": str(value)}
        return {"stringValue": str(value)}  # beyond int64: what OTLP carries is a string
    if isinstance(value, float):
        if math.isnan(value):
            return {"doubleValue": "NaN"}  # OTLP JSON's spelling of non-finite doubles
        if math.isinf(value):
            return {"doubleValue": "Infinity" if value > 0 else "-Infinity"}
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_ref_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _ref_key_values(attributes) -> list[dict]:
    return [{"key": k, "value": _ref_value(v)} for k, v in attributes.items()]


def _ref_span(span, attributes) -> dict:
    ctx = span.context
    out: dict = {
        "traceId": format(ctx.trace_id, "032x"),
        "spanId": format(ctx.span_id, "016x"),
        "name": span.name,
        "kind": span.kind.value + 1,  # OTLP's enum starts at UNSPECIFIED=0
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _ref_key_values(attributes),
        "status": {"code": span.status.status_code.value},
    }
    if span.parent is not None:
        out["parentSpanId"] = format(span.parent.span_id, "016x")
    if span.status.description:
        out["status"]["message"] = redact_text(span.status.description)
    if span.events:
        out["events"] = [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": _ref_key_values(redacted_attributes(e.attributes or {})),
            }
            for e in span.events
        ]
    return out


def _reference_request(spans, *, truncate_to=None) -> dict:
    """The OTLP/JSON mapping spelled out as dicts: what the trace file's hand-written line
    encoder must produce, byte for byte, once json.dumps'ed compactly."""
    groups: dict[tuple, dict] = {}
    for span in spans:
        scope = span.instrumentation_scope
        key = (id(span.resource), id(scope))
        group = groups.get(key)
        if group is None:
            name, version = (scope.name, scope.version) if scope else ("", None)
            group = groups[key] = {
                "resource": dict(span.resource.attributes or {}),
                "scope": {"name": name, **({"version": version} if version else {})},
                "spans": [],
            }
        attributes = redacted_attributes(span.attributes or {}, truncate_to=truncate_to)
        group["spans"].append(_ref_span(span, attributes))
    resource_spans = [
        {
            "resource": {"attributes": _ref_key_values(g["resource"])},
            "scopeSpans": [{"scope": g["scope"], "spans": g["spans"]}],
        }
        for g in groups.values()
    ]
    return {"resourceSpans": resource_spans}


_attr_values = st.one_of(
    st.text(max_size=30),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(),
    st.lists(st.one_of(st.text(max_size=10), st.integers(0, 9), st.booleans()), max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(
    spans=st.lists(
        st.fixed_dictionaries(
            {
                "name": st.text(max_size=20),
                "attributes": st.dictionaries(st.text(max_size=12), _attr_values, max_size=6),
                "parent": st.booleans(),
                "error": st.one_of(st.none(), st.text(max_size=20)),
                "events": st.lists(
                    st.dictionaries(st.text(max_size=8), _attr_values, max_size=3), max_size=2
                ),
                "scope_version": st.sampled_from([None, "1.0"]),
            }
        ),
        min_size=1,
        max_size=4,
    )
)
def test_the_line_encoder_writes_exactly_the_reference_otlp_json(spans):
    # The trace file is read back by re-grading and by the Collector's file receiver: the
    # hand-written encoder must give byte for byte what json.dumps of the reference dicts gives,
    # secrets redacted alike, for any attribute shape the SDK allows.
    resource = Resource.create({"service.name": "tracegrade"})
    built = []
    for i, s in enumerate(spans):
        status = (
            Status(StatusCode.ERROR, s["error"])
            if s["error"] is not None
            else Status(StatusCode.OK)
        )
        built.append(
            ReadableSpan(
                name=s["name"],
                context=SpanContext(0xABCDEF + i, 0xFACE + i, False),
                parent=SpanContext(0xABCDEF + i, 0xBEEF, False) if s["parent"] else None,
                resource=resource,
                attributes={**s["attributes"], "note": "Bearer abcdefghijklmnop123"},
                events=[Event("e", a, timestamp=7) for a in s["events"]],
                kind=SpanKind.CLIENT,
                status=status,
                start_time=1,
                end_time=2,
                instrumentation_scope=InstrumentationScope("tracegrade", s["scope_version"]),
            )
        )
    line = encode_line(built)
    assert line == json.dumps(_reference_request(built), ensure_ascii=False, separators=(",", ":"))
    assert encode_spans(built) == _reference_request(built)
    assert "abcdefghijklmnop123" not in line


def test_an_archive_mixing_runs_and_targets_keeps_them_apart(tmp_path):
    # A collector archive holds many runs: the same question of two targets and two runs, each
    # with different calls. Keyed by question id alone they merged into one record, silently.
    path = tmp_path / "archive.jsonl"
    script = {
        ("r1", "a"): [call(tool_call("lookup", {"q": "1a"}, id="c")), say("x")],
        ("r1", "b"): [call(tool_call("fetch", {"url": "u"}, id="c")), say("x")],
        ("r2", "a"): [say("nothing")],
    }
    with RunTelemetry(trace_file=path) as tel:
        for (run, target), turns in script.items():
            rec = Recorder(
                tracer=tel.tracer,
                question_id="q",
                dataset="ds",
                target=target,
                agent_name="desk",
                run_id=run,
            )
            graph = react_agent(ScriptedChatModel(script=turns), [lookup, fetch])
            with rec.question_span():
                state = graph.invoke({"messages": [("user", "go")]}, {"callbacks": [rec]})
            rec.seal(state)
    runs = read_question_runs(path)
    assert {k: [c.name for c in r] for k, r in runs.items()} == {
        QuestionRunKey("r1", "a", "q", 0): ["lookup"],
        QuestionRunKey("r1", "b", "q", 0): ["fetch"],
        QuestionRunKey("r2", "a", "q", 0): [],
    }
    with pytest.raises(InputError, match=r"question 'q' \(trial 0\) more than once") as caught:
        read_records(path)
    assert caught.value.exit_code == 4 and "run r1 target a" in str(caught.value)
    assert [c.name for c in read_records(path, target="b")["q"]] == ["fetch"]
    assert list(read_records(path, target="a", run="r2")["q"]) == []
    with pytest.raises(InputError):
        read_records(path, target="a")  # still two runs of it


# -- reading the lines of some traces only (a page's first rows) -----------------------------
def _recorded_spans(tmp_path_factory) -> list[dict]:
    """Every span of four recorded questions (calls, a failing call, none), in file order."""
    path = tmp_path_factory.mktemp("narrow") / "t.jsonl"
    script = {
        "q1": [call(tool_call("lookup", {"q": "1"}, id="c")), say("x")],
        "q2": [call(tool_call("fetch", {"url": "u"}, id="c"), tool_call("boom", {}, id="d")),
               say("y")],
        "q3": [say("nothing")],
        "q4": [call(tool_call("lookup", {"q": "4"}, id="c")), say("z")],
    }  # fmt: skip
    with RunTelemetry(trace_file=path) as tel:
        for qid, turns in script.items():
            rec = Recorder(
                tracer=tel.tracer, question_id=qid, dataset="ds", target="t", agent_name="desk"
            )
            graph = react_agent(ScriptedChatModel(script=turns), [lookup, fetch, boom])
            with rec.question_span():
                state = graph.invoke({"messages": [("user", "go")]}, {"callbacks": [rec]})
            rec.seal(state)
    return [
        span
        for line in path.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


@pytest.fixture(scope="module")
def recorded_spans(tmp_path_factory) -> list[dict]:
    return _recorded_spans(tmp_path_factory)


@settings(max_examples=60, deadline=None)
@given(
    order=st.randoms(use_true_random=False),
    cuts=st.lists(st.booleans(), min_size=40, max_size=40),
    broken=st.one_of(st.none(), st.integers(0, 3)),
)
def test_reading_some_traces_gives_their_records_as_a_whole_read_does(
    recorded_spans, tmp_path_factory, order, cuts, broken
):
    # Lines of the file as exporters write them: spans of several questions in one line, one
    # question's spans over several lines, in any order; perhaps a line cut short that still
    # names a question's trace. Reading only the lines naming a trace gives that trace's
    # record exactly as reading the whole file does.
    spans = list(recorded_spans)
    order.shuffle(spans)
    lines, line = [], []
    for i, span in enumerate(spans):
        line.append(span)
        if cuts[i % len(cuts)] or i == len(spans) - 1:
            lines.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": line}]}]}))
            line = []
    if broken is not None:
        lines.insert(broken % len(lines), lines[broken % len(lines)][:-7])
    path = tmp_path_factory.mktemp("lines") / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    whole = read_question_runs(path)
    assert {k.question_id for k in whole} == {"q1", "q2", "q3", "q4"}
    traces = {
        s["traceId"].lower()
        for s in spans
        for a in s.get("attributes", [])
        if a["key"] == "tracegrade.question.id"
    }
    assert len(traces) == 4
    for trace in traces:
        some = read_question_runs(path, traces=frozenset({trace}))
        (key,) = [k for k in whole if k in some and _trace_of(spans, k.question_id) == trace]
        assert some[key] == whole[key] and some[key].problems == whole[key].problems


def _trace_of(spans: list[dict], question_id: str) -> str:
    (trace,) = {
        s["traceId"].lower()
        for s in spans
        for a in s.get("attributes", [])
        if a["key"] == "tracegrade.question.id" and a["value"].get("stringValue") == question_id
    }
    return trace
