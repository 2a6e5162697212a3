"""Export: what reaches a real OTLP/HTTP receiver (names, attributes, parentage, redaction,
truncation), and a dead collector that never fails or stalls a run."""

from __future__ import annotations

import json
import logging
import socket
import time

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.tools import tool
from opentelemetry import trace

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import lookup, react_agent
from tests.otlp_receiver import otlp_receiver  # noqa: F401  (fixture)
from tracegrade import Recorder, RunTelemetry, read_records
from tracegrade.capture.tracefile import redacted_attributes
from tracegrade.redaction import REDACTED, SECRET_NAME_FRAGMENTS

BEARER = "Bearer abcdefghijklmnopqrstuvwxyz0123456789"


@tool
def connect(host: str, api_key: str, header: str, blob: str) -> str:
    """Connect somewhere."""
    return f"connected to {host}"


def run_once(tel, qid="q1"):
    turns = [
        call(
            tool_call(
                "connect",
                {"host": "db", "api_key": "k-999-secret", "header": BEARER, "blob": "b" * 10_000},
                id="c1",
            ),
            tool_call("lookup", {"q": "x"}, id="c2"),
        ),
        say("ok"),
    ]
    graph = react_agent(ScriptedChatModel(script=turns), [connect, lookup], name="desk")
    rec = Recorder(tracer=tel.tracer, question_id=qid, dataset="ds", target="tg", agent_name="desk")
    with rec.question_span():
        state = graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [rec]})
    return rec, rec.seal(state)


def test_spans_arrive_at_a_real_otlp_receiver_redacted(otlp_receiver):  # noqa: F811
    global_provider = trace.get_tracer_provider()
    tel = RunTelemetry(
        trace_file=None, otlp_endpoint=otlp_receiver.endpoint, otlp_headers={"x-tenant": "t1"}
    )
    rec, record = run_once(tel)
    report = tel.shutdown()
    assert trace.get_tracer_provider() is global_provider  # never the global provider
    spans = otlp_receiver.spans()
    assert report.exported == len(spans) == 6 and report.failed == 0 and report.ok
    assert otlp_receiver.headers[0]["x-tenant"] == "t1"
    by_name = {s.name: s for s in spans}
    assert set(by_name) == {
        "tracegrade.question",
        "invoke_agent desk",
        "chat scripted",
        "execute_tool connect",
        "execute_tool lookup",
    }
    question, agent = by_name["tracegrade.question"], by_name["invoke_agent desk"]
    tool_span = by_name["execute_tool connect"]
    assert question.parent_span_id == "" and question.trace_id == rec.trace_id
    assert question.attributes["tracegrade.question.id"] == "q1"
    assert question.attributes["tracegrade.target"] == "tg"
    assert agent.parent_span_id == question.span_id
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert tool_span.parent_span_id == agent.span_id
    assert all(s.trace_id == rec.trace_id for s in spans)
    assert tool_span.attributes["gen_ai.tool.name"] == "connect"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool_span.attributes["openinference.span.kind"] == "TOOL"
    assert tool_span.attributes["tracegrade.tool.qualified_id"] == "desk:connect"
    assert tool_span.resource["service.name"] == "tracegrade"
    # Redaction by argument name and by value pattern; truncation on export only.
    for key in ("gen_ai.tool.call.arguments", "input.value"):
        sent = tool_span.attributes[key]
        assert len(sent) == 4096
        assert "k-999-secret" not in sent and "abcdefghijklmnopqrstuvwxyz" not in sent
        assert f'"api_key": "{REDACTED}"' in sent and f'"header": "{REDACTED}"' in sent
    assert record[0].arguments["api_key"] == "k-999-secret"  # the in-process record is whole
    assert len(record[0].arguments["blob"]) == 10_000


def test_standard_environment_variables_configure_the_endpoint(otlp_receiver, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=evals")
    tel = RunTelemetry(trace_file=None)
    run_once(tel)
    report = tel.shutdown()
    assert report.endpoint == f"{otlp_receiver.endpoint}/v1/traces"
    assert report.exported == 6 and len(otlp_receiver.spans()) == 6
    assert otlp_receiver.headers[0]["x-team"] == "evals"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_collector_never_fails_or_stalls_a_run(tmp_path, caplog):
    path = tmp_path / "traces.jsonl"
    started = time.monotonic()
    tel = RunTelemetry(
        trace_file=path, otlp_endpoint=f"http://127.0.0.1:{closed_port()}", export_timeout_s=1.0
    )
    records = [run_once(tel, f"q{i}")[1] for i in range(3)]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tracegrade.capture.telemetry"):
        report = tel.shutdown()
        assert tel.shutdown() is report  # idempotent, reported once
    elapsed = time.monotonic() - started
    assert elapsed < 8, f"a dead collector stalled the run for {elapsed:.1f}s"
    assert all(r.complete and len(r) == 2 for r in records)
    assert report.exported == 0 and report.failed == 18 and not report.ok
    assert report.first_failure and "127.0.0.1" in report.first_failure
    assert len([r for r in caplog.records if r.name == "tracegrade.capture.telemetry"]) == 1
    assert report.written == 18 and set(read_records(path)) == {"q0", "q1", "q2"}


def test_slow_collector_is_bounded_by_the_export_timeout(tmp_path):
    """A collector that accepts connections and never answers costs one timeout, not one per
    batch, and never touches the run itself."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes handshakes; nobody ever reads or answers
        port = silent.getsockname()[1]
        tel = RunTelemetry(
            trace_file=None, otlp_endpoint=f"http://127.0.0.1:{port}", export_timeout_s=0.5
        )
        started = time.monotonic()
        records = [run_once(tel, f"q{i}")[1] for i in range(2)]
        tel.flush()  # one batch now: it waits out the timeout
        records.append(run_once(tel, "q2")[1])
        report = tel.shutdown()  # the next batch is dropped at once, not waited on
        elapsed = time.monotonic() - started
    assert all(r.complete and len(r) == 2 for r in records)
    assert elapsed < 4, f"a silent collector stalled the run for {elapsed:.1f}s"
    assert report.exported == 0 and report.failed == 18


def test_sdk_length_limits_from_the_environment_never_cut_the_record(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "16")
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "16")
    path = tmp_path / "t.jsonl"
    with RunTelemetry(trace_file=path) as tel:
        _, record = run_once(tel)
    (back,) = [c for c in read_records(path)["q1"] if c.name == "connect"]
    assert len(back.arguments["blob"]) == 10_000 == len(record[0].arguments["blob"])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    arguments=st.dictionaries(st.text(max_size=12), json_values, max_size=4),
    fragment=st.sampled_from(SECRET_NAME_FRAGMENTS),
    secret=st.text(min_size=6, max_size=20).filter(lambda s: s.strip() and REDACTED not in s),
)
def test_secret_named_arguments_never_leave_at_any_depth(arguments, fragment, secret):
    nested = {**arguments, "outer": {f"My{fragment.upper()}": secret, "list": [{fragment: secret}]}}
    text = json.dumps(nested)
    out = redacted_attributes({"gen_ai.tool.call.arguments": text, "input.value": text})
    for value in out.values():
        decoded = json.loads(value)
        assert decoded["outer"][f"My{fragment.upper()}"] == REDACTED
        assert decoded["outer"]["list"][0][fragment] == REDACTED
