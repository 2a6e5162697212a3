"""`tracegrade grade-traces`: traces an agent made outside tracegrade (a plain LangGraph app
instrumented with OpenInference, OTel GenAI spans, tracegrade's own trace files) graded with a
target's graders into a normal run, with the verdicts `tracegrade run` gives the same agent."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.runs_support import QUESTIONS, write_project
from tracegrade.capture.tracefile import TraceFileExporter, read_trial_records
from tracegrade.cli import main

pytest.importorskip("openinference.instrumentation.langchain")

TRAJECTORY = {
    "paris": {"calls": [{"tool": "lookup", "args": {"city": "Paris"}}]},
    "rome": {"calls": [{"tool": "lookup"}]},
    "cancel": {"calls": [{"tool": "cancel", "args": {"booking_id": "B100"}}]},
}
GRADERS = ["tool_usage_grader", {"id": "trajectory_grader", "must_pass": True}]


def _project(root: Path) -> Path:
    rows = []
    for qid in ("paris", "rome", "cancel"):
        row = dict(QUESTIONS[qid])
        row["trajectory"] = TRAJECTORY[qid]
        rows.append(row)
    rows[2]["expected_tools"] = [{"tool": "cancel", "should_run": True}]
    return write_project(
        root, questions=[], extra_questions=rows, target={"graders": GRADERS, "concurrency": 1}
    )


def _load_agent(root: Path):
    spec = importlib.util.spec_from_file_location(f"plain_app_{id(root)}", root / "agent.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _plain_app_with_openinference(root: Path, archive: Path, inputs: list[str]) -> None:
    """The agent as its own app: built and invoked directly, instrumented with OpenInference
    only, exporting to a file in the Collector's format. tracegrade never runs it."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(archive)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        graph = _load_agent(root).build_graph()
        for text in inputs:
            asyncio.run(graph.ainvoke({"messages": [("user", text)]}))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def _verdicts(report: dict) -> dict[tuple[str, str], tuple]:
    """(question, grader) -> (score, passed, reason), the action graders' verdicts."""
    return {
        (q["id"], g["id"]): (g["score"], g["passed"], g["reason"])
        for q in report["questions"]
        for g in q["graders"]
        if g["id"] in ("tool_usage_grader", "trajectory_grader")
    }


def _calls(report: dict) -> dict[str, list]:
    return {
        q["id"]: [(c["name"], c["outcome"], c["args"]) for c in q["tool_calls"] or ()]
        for q in report["questions"]
    }


def test_openinference_traces_of_a_plain_app_get_the_verdicts_run_gives(tmp_path):
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    run_code = main(["run", "--config", str(config), "--quiet", "--json", str(ran)])
    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    inputs = [QUESTIONS[q]["input"] for q in ("paris", "rome", "cancel")]
    _plain_app_with_openinference(tmp_path / "proj", archive, inputs)
    graded = tmp_path / "graded.json"
    code = main(
        [
            "grade-traces",
            str(archive),
            "--config",
            str(config),
            "--target",
            "t",
            "--quiet",
            "--json",
            str(graded),
        ]
    )
    ran_report, graded_report = json.loads(ran.read_text()), json.loads(graded.read_text())
    assert run_code == 2 and code == run_code  # rome never calls lookup: a must-pass fails
    expected = _verdicts(ran_report)
    assert len(expected) == 6
    assert _verdicts(graded_report) == expected
    assert _calls(graded_report) == _calls(ran_report)
    assert graded_report["gate"] == ran_report["gate"]
    notes = " ".join(graded_report["notes"])
    assert "paired 3 trace(s) with 3 of 3 question(s): 3 by input (exact)" in notes


def test_a_runs_own_trace_file_pairs_by_question_id_and_the_run_regrades(tmp_path):
    # tracegrade's own spans carry the question id: pairing needs no input text, and the run
    # directory grade-traces writes is a run like any other (`grade` re-scores it the same).
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(ran)]) == 2
    ran_report = json.loads(ran.read_text())
    trace_file = tmp_path / "proj" / "runs" / ran_report["run_id"] / "traces" / "t.jsonl"
    graded = tmp_path / "graded.json"
    argv = ["grade-traces", str(trace_file.parent), "--config", str(config), "--target", "t"]
    assert main([*argv, "--quiet", "--json", str(graded)]) == 2
    graded_report = json.loads(graded.read_text())
    assert _verdicts(graded_report) == _verdicts(ran_report)
    assert "3 by question-id" in " ".join(graded_report["notes"])
    # the new run's trace file holds the same records, under the source traces' ids
    run_dir = tmp_path / "proj" / "runs" / graded_report["run_id"]
    records = read_trial_records(run_dir / "traces" / "t.jsonl")
    source = read_trial_records(trace_file)
    assert {k: [(c.name, c.outcome, dict(c.arguments)) for c in r] for k, r in records.items()} == {
        k: [(c.name, c.outcome, dict(c.arguments)) for c in r] for k, r in source.items()
    }
    regraded = tmp_path / "regraded.json"
    code = main(
        ["grade", str(run_dir), "--config", str(config), "--quiet", "--json", str(regraded)]
    )
    assert code == 2
    assert _verdicts(json.loads(regraded.read_text())) == _verdicts(ran_report)


def _genai_request(spans: list[dict]) -> dict:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}


def _attrs(**values) -> list[dict]:
    out = []
    for key, value in values.items():
        key = key.replace("__", ".")
        v = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}
        out.append({"key": key, "value": v})
    return out


def _span(trace, span, parent, name, start, end, status=0, **attributes) -> dict:
    out = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attrs(**attributes),
        "status": {"code": status},
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def _genai_trace(trace: str, conversation: str, *, calls: list[tuple], ran: list[tuple]) -> list:
    """An OTel GenAI agent trace: invoke_agent > chat (requesting `calls` in parallel) >
    execute_tool spans for `ran` (name, call id, status), > chat (the answer)."""
    parts = [
        {"type": "tool_call", "id": cid, "name": name, "arguments": args}
        for name, cid, args in calls
    ]
    user = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
    spans = [
        _span(
            trace,
            "a" * 16,
            "",
            "invoke_agent desk",
            0,
            100,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="desk",
            gen_ai__conversation__id=conversation,
            gen_ai__input__messages=json.dumps(user),
            gen_ai__output__messages=json.dumps(answer),
        ),
        _span(
            trace,
            "b" * 16,
            "a" * 16,
            "chat m",
            1,
            10,
            gen_ai__operation__name="chat",
            gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": parts}]),
        ),
    ]
    for n, (name, cid, status) in enumerate(reversed(ran)):  # parallel: started in any order
        spans.append(
            _span(
                trace,
                f"{n + 1:016x}",
                "a" * 16,
                f"execute_tool {name}",
                20 + n,
                30 + n,
                status=status,
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name=name,
                gen_ai__tool__call__id=cid,
                **({"error__type": "ValueError"} if status == 2 else {}),
            )
        )
    spans.append(_span(trace, "c" * 16, "a" * 16, "chat m", 40, 50, gen_ai__operation__name="chat"))
    return spans


def test_genai_spans_in_a_protobuf_file_pair_by_conversation_id(tmp_path):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tracegrade import Outcome
    from tracegrade.traces.archive import pair_traces, read_trace_files

    spans = _genai_trace(
        "1" * 32,
        "paris",
        calls=[("lookup", "c1", {"city": "Paris"}), ("ghost", "c2", {}), ("cancel", "c3", {})],
        ran=[("lookup", "c1", 0), ("cancel", "c3", 2)],
    )
    request = _genai_request(spans)
    for s in request["resourceSpans"][0]["scopeSpans"][0]["spans"]:  # protobuf JSON: base64 ids
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in s:
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    message = json_format.ParseDict(request, ExportTraceServiceRequest())
    path = tmp_path / "export.pb"
    path.write_bytes(message.SerializeToString())
    traces = read_trace_files([tmp_path])
    (trace,) = traces.traces
    assert trace.dialect == "genai" and trace.user_message == "hi" and trace.answer == "done"
    by_call = {c.call_id: c for c in trace.record}
    assert {k: c.outcome for k, c in by_call.items()} == {
        "c1": Outcome.OK,
        "c2": Outcome.NOT_EXECUTED,
        "c3": Outcome.ERROR,
    }
    # one model message requested all three: same turn, their index in it
    assert [(c.model_turn, c.index_in_turn) for c in trace.record.requested_order()] == [
        (0, 0),
        (0, 1),
        (0, 2),
    ]
    assert by_call["c1"].arguments == {"city": "Paris"} and by_call["c3"].error_type == "ValueError"

    class Q:
        def __init__(self, qid, text):
            self.id, self.input = qid, text

        def flattened_input(self):
            return self.input

        def input_messages(self):
            return [{"role": "user", "content": self.input}]

    pairing = pair_traces(traces.traces, [Q("paris", "something else"), Q("rome", "hi")])
    assert [(str(p.question.id), p.how) for p in pairing.pairs] == [("paris", "conversation-id")]


def test_pairing_by_input_normalised_and_the_unmatched_are_listed(tmp_path):
    config = _project(tmp_path / "proj")
    archive = tmp_path / "traces.jsonl"
    lines = [
        _genai_request(_genai_trace("2" * 32, "x1", calls=[], ran=[])),
        _genai_request(_genai_trace("3" * 32, "x2", calls=[], ran=[])),
    ]
    # the first user message differs from the dataset's only by case and spacing
    lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][3]["value"] = {
        "stringValue": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "  Weather in  ROME? "}]}]
        )
    }
    archive.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    report = tmp_path / "r.json"
    code = main(
        [
            "grade-traces",
            str(archive),
            "--config",
            str(config),
            "--target",
            "t",
            "--quiet",
            "--json",
            str(report),
        ]
    )
    data = json.loads(report.read_text())
    notes = " ".join(data["notes"])
    assert "paired 1 trace(s) with 1 of 3 question(s): 1 by input (normalised)" in notes
    assert f"1 trace(s) matched no question: {'3' * 32}" in notes
    assert [q["id"] for q in data["questions"]] == ["rome"]
    assert code == 2  # rome called nothing: its trajectory fails, as in a run


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not a trace\n", "neither OTLP JSON lines nor an OTLP protobuf export"),
        (b'{"not": "otlp"}\n', "no line is an OTLP JSON trace export"),
        (b"\x00\x01\x02garbage", "neither OTLP JSON lines nor an OTLP protobuf export"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId"', "not an OTLP JSON line"),
    ],
)
def test_a_file_that_is_not_otlp_is_invalid_input_naming_it(tmp_path, capsys, content, message):
    config = _project(tmp_path / "proj")
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    code = main(["grade-traces", str(path), "--config", str(config), "--target", "t"])
    assert code == 4
    err = capsys.readouterr().err
    assert str(path) in err and message in err


def test_a_truncated_last_line_is_skipped_and_reported(tmp_path):
    from tracegrade.traces.archive import read_trace_files

    good = json.dumps(_genai_request(_genai_trace("4" * 32, "c", calls=[], ran=[])))
    path = tmp_path / "traces.jsonl"
    path.write_text(good + "\n" + good[: len(good) // 2])  # a collector killed mid-write
    traces = read_trace_files([path])
    assert len(traces.traces) == 1
    notes = traces.notes()
    assert "1 unreadable line(s) skipped" in notes
    assert any(f"{path}:2: not an OTLP JSON line" in n for n in notes)


def test_a_trace_beyond_the_span_cap_is_dropped_and_reported(monkeypatch):
    from tracegrade.traces import archive
    from tracegrade.traces.spans import Span

    monkeypatch.setattr(archive, "MAX_SPANS_PER_TRACE", 50)

    def spans():  # a generator: the huge trace is never held whole
        for n in range(10_000):
            yield Span(
                "f" * 32,
                f"{n + 1:016x}",
                "",
                "execute_tool x",
                n,
                n,
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "x"},
            )

    result = archive.traces_of_spans(spans())
    assert result.traces == [] and result.too_large == ["f" * 32]
    assert any("dropped for holding more than 50 spans" in n for n in result.notes())


def test_a_window_and_no_match_are_nothing_to_grade(tmp_path, capsys):
    config = _project(tmp_path / "proj")
    archive = tmp_path / "traces.jsonl"
    archive.write_text(
        json.dumps(_genai_request(_genai_trace("5" * 32, "nobody", calls=[], ran=[])))
    )
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    # the trace started at the epoch: a window from 2020 on leaves nothing
    assert main([*argv, "--since", "2020-01-01T00:00:00"]) == 5
    assert "1 trace(s) outside --since/--until" in capsys.readouterr().err
    assert main([*argv, "--since", "yesterday"]) == 4
    assert "--since" in capsys.readouterr().err
    # in the window, but its input ("hi") is no question's: nothing graded, no run left behind
    assert main([*argv, "--until", "2020-01-01"]) == 5
    assert "no trace matched a question of target 't'" in capsys.readouterr().err
    runs = tmp_path / "proj" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


class PhoenixStandIn:
    """A loopback stand-in speaking Phoenix's span REST API (`GET /v1/projects/{p}/spans`:
    `start_time`, `end_time`, `limit`, `cursor`; answers `data` and `next_cursor`), serving
    spans in Phoenix's own form. Not Phoenix: the same API, for the test to run offline."""

    def __init__(self, project: str, spans: list[dict]):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlsplit

        stand_in = self
        self.requests: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                stand_in.requests.append(query)
                if url.path != f"/v1/projects/{project}/spans":
                    return self._send(404, {"detail": "not found"})
                chosen = [
                    s
                    for s in spans
                    if s["start_time"] >= query.get("start_time", "")
                    and ("end_time" not in query or s["start_time"] < query["end_time"])
                ]
                start = int(query.get("cursor", 0))
                limit = min(int(query.get("limit", 100)), 7)  # small pages: pagination is used
                page = chosen[start : start + limit]
                more = start + limit < len(chosen)
                self._send(200, {"data": page, "next_cursor": str(start + limit) if more else None})

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _phoenix_form(span) -> dict:
    from datetime import UTC, datetime

    def iso(ns):
        return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()

    attributes = dict(span.attributes)
    kind = attributes.pop("openinference.span.kind", "UNKNOWN")  # a column in Phoenix
    return {
        "name": span.name,
        "context": {"trace_id": span.trace_id, "span_id": span.span_id},
        "parent_id": span.parent_id or None,
        "span_kind": kind,
        "start_time": iso(span.start_ns),
        "end_time": iso(span.end_ns),
        "status_code": {0: "UNSET", 1: "OK", 2: "ERROR"}[span.status_code],
        "status_message": span.status_message,
        "attributes": attributes,
        "events": [],
    }


def test_a_phoenix_project_read_through_its_rest_api_gets_the_verdicts_run_gives(tmp_path):
    from tracegrade.traces.spans import read_spans

    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(ran)]) == 2
    archive = tmp_path / "oi.jsonl"
    _plain_app_with_openinference(
        tmp_path / "proj", archive, [QUESTIONS[q]["input"] for q in ("paris", "rome", "cancel")]
    )
    spans = sorted((_phoenix_form(s) for s in read_spans(archive)), key=lambda s: s["start_time"])
    phoenix = PhoenixStandIn("prod", spans)
    try:
        graded = tmp_path / "graded.json"
        argv = ["grade-traces", "--from", "phoenix", "--endpoint", phoenix.endpoint]
        argv += ["--config", str(config), "--target", "t", "--quiet"]
        code = main([*argv, "--project", "prod", "--since", "2000-01-01", "--json", str(graded)])
        assert code == 2
        assert _verdicts(json.loads(graded.read_text())) == _verdicts(json.loads(ran.read_text()))
        assert len(phoenix.requests) > 1 and "cursor" in phoenix.requests[-1]  # paged
        assert phoenix.requests[0]["start_time"].startswith("2000-01-01T00:00:00")
        assert main([*argv, "--project", "nope"]) == 4  # no such project
    finally:
        phoenix.close()
    assert main([*argv, "--project", "prod"]) == 3  # the backend is gone: never a pass


def test_the_agent_is_never_imported(tmp_path):
    # the traces were made elsewhere: an agent module that cannot even be imported here (its
    # dependencies live in production) is never imported: importing it cost seconds and memory
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(ran)]) == 2
    ran_report = json.loads(ran.read_text())
    trace_file = tmp_path / "proj" / "runs" / ran_report["run_id"] / "traces" / "t.jsonl"
    imported = tmp_path / "imported"
    elsewhere = _project(tmp_path / "elsewhere")  # a fresh path: no module cached for it
    agent = tmp_path / "elsewhere" / "agent.py"
    agent.write_text(f"open({str(imported)!r}, 'w').close()\n" + agent.read_text())
    graded = tmp_path / "graded.json"
    argv = ["grade-traces", str(trace_file), "--config", str(elsewhere), "--target", "t"]
    assert main([*argv, "--quiet", "--json", str(graded)]) == 2
    assert _verdicts(json.loads(graded.read_text())) == _verdicts(ran_report)
    assert not imported.exists()
