"""The second fault campaign's cases against traces made outside tracegrade (`grade-traces`,
`grade` on its run, `receive`): a dropped runaway trace, JSON nested past any parser's depth, a
full temporary directory under the spill, a protobuf archive cut mid-write, files that are not
files. Each ends in its documented exit code with what failed named, never a traceback and
never a pass."""

from __future__ import annotations

import json
import os
import resource
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs_support import write_project
from tracegrade.cli import main

REPO = Path(__file__).resolve().parents[1]
GRADERS = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]


def _project(root: Path) -> Path:
    return write_project(root, questions=["paris"], target={"graders": GRADERS})


def _kv(**values: object) -> list[dict]:
    out = []
    for key, value in values.items():
        v = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}
        out.append({"key": key.replace("__", "."), "value": v})
    return out


def _span(trace: str, span: str, parent: str, name: str, **attributes: object) -> dict:
    out = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "startTimeUnixNano": str(int(trace[:6], 16) * 100 + int(span[-4:], 16)),
        "endTimeUnixNano": str(int(trace[:6], 16) * 100 + 90),
        "attributes": _kv(**attributes),
        "status": {"code": 0},
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def paris_trace(trace: str, *, city: str = "Paris") -> list[dict]:
    """An OTel GenAI agent trace for question paris: the agent looks `city` up (Paris passes
    the must-pass tool_usage_grader, anything else fails it)."""
    root = "a" * 16
    call = {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"city": city}}
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "sunny"}]}]
    return [
        _span(
            trace,
            root,
            "",
            "invoke_agent helper",
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="helper",
            gen_ai__conversation__id="paris",
            gen_ai__output__messages=json.dumps(answer),
        ),
        _span(
            trace,
            "b" * 12 + "0001",
            root,
            "chat m",
            gen_ai__operation__name="chat",
            gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [call]}]),
        ),
        _span(
            trace,
            "b" * 12 + "0002",
            root,
            "execute_tool lookup",
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="lookup",
            gen_ai__tool__call__id="c1",
            gen_ai__tool__call__arguments=json.dumps({"city": city}),
        ),
    ]


def request(spans: list[dict]) -> dict:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}


def _grade(root: Path, *paths: Path, extra: tuple[str, ...] = ()) -> list[str]:
    config = root / "tracegrade.yaml"
    return ["grade-traces", *map(str, paths), "--config", str(config), "--target", "t", *extra]


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # pragma: no cover - argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out + err


PASSING = "100000" + "0" * 26
FAILING = "200000" + "0" * 26


# -- 1. a dropped runaway trace is never a pass ----------------------------------------------
def _with_runaway(root: Path, monkeypatch, before: list[dict]) -> Path:
    """The project and an archive of `before` then a failing trace past the span cap (4 here,
    100,000 in production)."""
    from tracegrade.traces import archive

    monkeypatch.setattr(archive, "MAX_SPANS_PER_TRACE", 4)
    _project(root)
    runaway = paris_trace(FAILING, city="Rome")
    runaway += [_span(FAILING, f"{n:016x}", "a" * 16, "step") for n in range(10, 20)]
    path = root / "traces.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [*before, request(runaway)]))
    return path


def test_a_trace_dropped_for_its_size_leaves_grade_traces_incomplete(tmp_path, capsys, monkeypatch):
    # The dropped trace is the one that would fail: grading the rest and passing would be a
    # false green. receive treats the same drop as incomplete; grade-traces must too.
    path = _with_runaway(tmp_path, monkeypatch, [request(paris_trace(PASSING))])
    code, out = _cli([*_grade(tmp_path, path), "--json", str(tmp_path / "r.json")], capsys)
    assert code == 3, out
    assert "dropped" in out and FAILING in out, out
    assert "gate: INCOMPLETE (exit 3)" in out and "gate: PASSED" not in out, out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["gate"]["exit_code"] == 3 and report["gate"]["passed"] is False


def test_only_dropped_traces_is_incomplete_not_nothing_to_run(tmp_path, capsys, monkeypatch):
    path = _with_runaway(tmp_path, monkeypatch, [])
    code, out = _cli(_grade(tmp_path, path), capsys)
    assert code == 3, out
    assert FAILING in out and "Traceback" not in out


# -- 2. JSON nested past any parser's depth --------------------------------------------------
def _deep_array_line(depth: int = 200_000) -> str:
    return "[" * depth + "]" * depth


def _deep_kvlist_line(depth: int = 3_000) -> str:
    value: dict = {"stringValue": "leaf"}
    text = json.dumps(value)
    for _ in range(depth):
        text = '{"kvlistValue": {"values": [{"key": "k", "value": ' + text + "}]}}"
    span = paris_trace(FAILING)[0]
    span["attributes"].append({"key": "deep", "value": "@@"})
    return json.dumps(request([span])).replace('"@@"', text)


@pytest.mark.parametrize("line", [_deep_array_line, _deep_kvlist_line], ids=["array", "kvlist"])
def test_a_deeply_nested_line_is_skipped_and_reported(tmp_path, capsys, line):
    _project(tmp_path)
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(request(paris_trace(PASSING))) + "\n" + line() + "\n")
    code, out = _cli(_grade(tmp_path, path, extra=("--json", str(tmp_path / "r.json"))), capsys)
    assert code == 0, out
    assert "1 unreadable line(s) skipped" in out and f"{path}:2" in out, out
    assert "nested too deep" in out, out
    # the run grade-traces wrote re-grades: its own trace file holds only what was read
    run_id = json.loads((tmp_path / "r.json").read_text())["run_id"]
    code, out = _cli(["grade", run_id, "--config", str(tmp_path / "tracegrade.yaml")], capsys)
    assert code == 0, out


def test_grade_of_a_run_whose_trace_file_holds_a_deep_line_reports_it(tmp_path, capsys):
    _project(tmp_path)
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(request(paris_trace(PASSING))) + "\n")
    code, out = _cli(_grade(tmp_path, path, extra=("--json", str(tmp_path / "r.json"))), capsys)
    assert code == 0, out
    run_id = json.loads((tmp_path / "r.json").read_text())["run_id"]
    trace_file = tmp_path / "runs" / run_id / "traces" / "t.jsonl"
    with trace_file.open("a") as out_file:
        out_file.write(_deep_array_line() + "\n")
    code, out = _cli(["grade", run_id, "--config", str(tmp_path / "tracegrade.yaml")], capsys)
    # the line holds no question's record: skipped and said, the records around it kept
    assert code == 0, out
    assert "t.jsonl:2: not an OTLP JSON line; skipped" in out, out


@pytest.mark.parametrize("line", [_deep_array_line, _deep_kvlist_line], ids=["array", "kvlist"])
def test_a_deeply_nested_body_is_400_not_500(line):
    from tracegrade.traces.live.ingest import JSON, BadRequest, decode_request

    with pytest.raises(BadRequest) as refused:
        decode_request(line().encode(), JSON)
    assert refused.value.status == 400
    assert "nested too deep" in refused.value.message


# -- 3. a full temporary directory under the spill -------------------------------------------
def test_a_full_temporary_directory_is_incomplete_naming_it(tmp_path):
    _project(tmp_path)
    path = tmp_path / "traces.jsonl"
    with path.open("w") as out:
        for n in range(400):  # a few MB of spans: the spill outgrows the limit below
            trace = f"{n + 1:06x}" + "0" * 26
            out.write(json.dumps(request(paris_trace(trace) * 1)) + "\n")
    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()

    def limit_file_size() -> None:  # past the limit a write fails (EFBIG), as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size // 2,) * 2)

    env = {
        "PYTHONPATH": str(REPO),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TMPDIR": str(spill_dir),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tracegrade", *_grade(tmp_path, path)],
        preexec_fn=limit_file_size,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode in (3, 4), out
    assert str(spill_dir) in out and "Traceback" not in out, out


# -- 11. a protobuf archive whose last request is cut -----------------------------------------
def _proto(spans: list[dict]) -> bytes:
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    body = request(spans)
    for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in s:
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    return json_format.ParseDict(body, ExportTraceServiceRequest()).SerializeToString()


def _framed(message: bytes) -> bytes:
    return struct.pack(">I", len(message)) + message


def test_a_protobuf_archive_cut_mid_request_skips_the_cut_request(tmp_path, capsys):
    _project(tmp_path)
    cut = _framed(_proto(paris_trace(FAILING, city="Rome")))
    path = tmp_path / "traces.pb"
    path.write_bytes(_framed(_proto(paris_trace(PASSING))) + cut[: len(cut) // 2])
    code, out = _cli(_grade(tmp_path, path), capsys)
    assert code == 0, out  # the cut request is skipped and said, as a cut JSON line is
    assert "1 unreadable line(s) skipped" in out or "1 unreadable request(s)" in out, out
    assert str(path) in out and "cut" in out, out


def test_protobuf_requests_are_read_one_at_a_time(tmp_path, monkeypatch):
    from tracegrade.traces import spans as spans_module

    path = tmp_path / "traces.pb"
    with path.open("wb") as out:
        for n in range(50):
            out.write(_framed(_proto(paris_trace(f"{n + 1:06x}" + "0" * 26))))
    reads: list[int] = []
    real_open = Path.open

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def read(self, size=-1):
            data = self.handle.read(size)
            reads.append(len(data))
            return data

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(Path, "open", lambda self, *a, **k: Counting(real_open(self, *a, **k)))
    got = list(spans_module.read_spans(path))
    assert len(got) == 150
    assert max(reads) < path.stat().st_size // 10  # never the whole file at once


# -- 12. files that are not files ------------------------------------------------------------
def test_a_fifo_named_as_a_trace_file_is_said_to_be_one(tmp_path, capsys):
    _project(tmp_path)
    fifo = tmp_path / "traces.jsonl"
    os.mkfifo(fifo)
    code, out = _cli(_grade(tmp_path, fifo), capsys)
    assert code == 4, out
    assert "FIFO" in out and str(fifo) in out and "no such file" not in out, out


def test_dev_zero_named_as_a_trace_file_is_said_to_be_a_device(tmp_path, capsys):
    _project(tmp_path)
    code, out = _cli(_grade(tmp_path, Path("/dev/zero")), capsys)
    assert code == 4, out
    assert "character device" in out and "/dev/zero" in out and "no such file" not in out, out


# -- 7. receive --gate with dropped traces ---------------------------------------------------
LOOPBACK_S = 120  # each request to the receiver: generous, as a loaded machine stretches it


def _receive(config: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tracegrade", "receive", "--config", str(config)),
            *("--target", "t", "--port", "0", "--quiet-period", "0.2", *extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)},
        cwd=config.parent,
    )
    line = process.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line + process.stderr.read()
    return process, line.split("listening on ", 1)[1].split(";", 1)[0]


def _rootless(spans: list[dict]) -> dict:
    return request([s for s in spans if "parentSpanId" in s])


def test_receive_gate_with_dropped_traces_is_incomplete_and_says_so(tmp_path, capsys):
    import time

    import httpx

    config = _project(tmp_path)
    process, url = _receive(config, "--window", "4", "--gate", "--max-traces", "1")
    try:
        assert (
            httpx.post(url, json=request(paris_trace(PASSING)), timeout=LOOPBACK_S).status_code
            == 200
        )
        status = url.replace("/v1/traces", "/status")
        deadline = time.monotonic() + 300  # generous: ends as soon as the trace is graded
        while httpx.get(status, timeout=LOOPBACK_S).json()["traces_graded"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # one trace held waiting for its root fills the cap: the next is dropped whole
        assert httpx.post(
            url, json=_rootless(paris_trace(f"{3:06x}" + "0" * 26)), timeout=LOOPBACK_S
        ).is_success
        refused = httpx.post(
            url, json=request(paris_trace(FAILING, city="Rome")), timeout=LOOPBACK_S
        ).json()
        assert refused["partialSuccess"]["rejectedSpans"] == "3"
        out, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 3, out + err
    assert "gate: PASSED" not in out and "gate: INCOMPLETE (exit 3)" in out, out
    assert "span(s) of agent traces were lost" in out, out
    run_id = next(p.name for p in (tmp_path / "runs").iterdir())
    junit = tmp_path / "show.xml"
    code, shown = _cli(["show", run_id, "--config", str(config), "--junit", str(junit)], capsys)
    assert code == 3, shown
    text = junit.read_text()
    assert 'errors="1"' in text and "span(s) of agent traces were lost" in text, text


def test_receive_gate_whose_only_traces_were_dropped_is_incomplete_not_nothing(tmp_path):
    import httpx

    config = _project(tmp_path)
    process, url = _receive(config, "--window", "2", "--gate", "--max-traces", "1")
    try:
        assert httpx.post(url, json=_rootless(paris_trace(PASSING)), timeout=LOOPBACK_S).is_success
        assert httpx.post(url, json=request(paris_trace(FAILING)), timeout=LOOPBACK_S).is_success
        out, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 3, out + err
    assert "no agent trace was graded in the window: nothing to gate" not in err


# -- 5. OpenInference traces: dict messages, a sub-agent's answer ---------------------------
def _router_app_traces(archive: Path, inputs: list[str]) -> None:
    """A desk graph handing every question to a `billing` sub-agent, then auditing it (a model
    call whose words are not returned), invoked with OpenAI-style message dicts (as LangGraph's
    docs do), traced by OpenInference only."""
    import asyncio

    from langgraph.graph import START, MessagesState, StateGraph
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agents.scripted import ScriptedChatModel, say
    from tracegrade.capture.tracefile import TraceFileExporter

    billing_model = ScriptedChatModel(script={"refund please": [say("Refund R-7 issued.")]})
    audit_model = ScriptedChatModel(script={"refund please": [say("Audit logged.")]})

    async def audit(state):
        await audit_model.ainvoke(state["messages"][:1])  # its words are not the answer
        return {}

    async def billing_agent(state):
        return {"messages": [await billing_model.ainvoke(state["messages"])]}

    sub = StateGraph(MessagesState)
    sub.add_node("billing_agent", billing_agent)
    sub.add_edge(START, "billing_agent")
    graph = StateGraph(MessagesState)
    graph.add_node("billing", sub.compile(name="billing"))
    graph.add_node("audit", audit)
    graph.add_edge(START, "billing")
    graph.add_edge("billing", "audit")
    app = graph.compile(name="desk")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(archive)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        for text in inputs:
            asyncio.run(app.ainvoke({"messages": [{"role": "user", "content": text}]}))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_openinference_dict_messages_pair_and_a_sub_agents_answer_is_read(tmp_path, capsys):
    pytest.importorskip("openinference.instrumentation.langchain")
    row = {"id": "refund", "input": "refund please", "expected": {"keyword": "R-7 issued"}}
    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=[row],
        target={"graders": [{"id": "contains", "match_on": ["expected", "keyword"]}]},
    )
    archive = tmp_path / "traces.jsonl"
    _router_app_traces(archive, ["refund please"])
    report = tmp_path / "r.json"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t"]
    code, out = _cli([*argv, "--json", str(report)], capsys)
    assert code == 0, out
    assert "1 by input (exact)" in out, out
    (question,) = json.loads(report.read_text())["questions"]
    (contains,) = [g for g in question["graders"] if g["id"] == "contains"]
    assert contains["passed"] is True, contains  # the answer the graph returned, not "Audit"


@pytest.mark.parametrize(
    "output",
    [
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "A"}]},
        {
            "messages": [
                {"type": "human", "data": {"content": "q"}},
                {"type": "ai", "data": {"content": "A"}},
            ]
        },
        {
            "messages": [
                {
                    "lc": 1,
                    "type": "constructor",
                    "id": ["langchain", "schema", "messages", "AIMessage"],
                    "kwargs": {"content": [{"type": "text", "text": "A"}]},
                }
            ]
        },
        {"messages": [["user", "q"], ["ai", "A"], {"type": "tool", "content": "x"}]},
        [{"type": "ai", "content": "first"}, {"type": "ai", "content": "A"}],
    ],
    ids=["role-dicts", "dumped", "serialised-parts", "pairs", "bare-list"],
)
def test_the_answer_is_the_last_ai_message_the_graph_returned_in_every_shape(output):
    from tracegrade.traces.dialects import agent_trace
    from tracegrade.traces.spans import Span

    def span(span_id, parent, **attributes):
        return Span("1" * 32, span_id, parent, "x", 1, 2, attributes)

    root = span(
        "a" * 16,
        "",
        **{
            "openinference.span.kind": "CHAIN",
            "llm.input_messages.0.message.role": "user",
            "input.value": json.dumps({"messages": [{"role": "user", "content": "q"}]}),
            "output.value": json.dumps(output),
        },
    )
    llm = span(
        "b" * 16,
        "a" * 16,
        **{"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "not it"},
    )
    trace = agent_trace([root, llm])
    assert trace is not None and trace.user_message == "q" and trace.answer == "A"


# -- item 6: receive holds spans by their size too ---------------------------------------------
def _big_rootless(n: int, megabytes: float):
    from tracegrade.traces.spans import Span

    return Span(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        parent_id="ab" * 8,  # rootless: the trace waits for a root that never comes
        name="llm",
        start_ns=n,
        end_ns=n + 1,
        attributes={"input.value": "x" * int(megabytes * 2**20)},
    )


def test_receive_holds_spans_by_their_size_not_only_their_count():
    """40 rootless spans of 20 MB each took about a gigabyte under a count-only bound: past
    the held size, spans are refused and counted, and what is held stays under it."""
    from tracegrade.traces.live.assembly import Assembler, Limits

    assembler = Assembler(Limits(max_bytes=100 * 2**20, quiet_s=0.0))
    refused = sum(assembler.add([_big_rootless(n, 20)]) for n in range(1, 41))

    assert refused == 36  # four 20 MB spans fit under 100 MB, the rest are refused
    assert assembler.bytes_held <= 100 * 2**20
    assert len(assembler.held) == 4
    assert assembler.counts["traces_dropped_cap"] == 36
    taken = assembler.take_unfinished()  # what a stop persists to pending.jsonl: bounded too
    assert len(taken) == 4 and assembler.bytes_held == 0


def test_the_held_size_is_released_when_a_trace_is_graded():
    from tracegrade.traces.live.assembly import Assembler, Limits, span_size

    span = _big_rootless(7, 0.5)
    root = span.__class__(**{**{s: getattr(span, s) for s in span.__slots__}, "parent_id": ""})
    assembler = Assembler(Limits(max_bytes=4 * 2**20, quiet_s=0.0))
    assert assembler.add([root]) == 0 and assembler.bytes_held == span_size(root)
    assert assembler.collect(force=True) == 1 and assembler.bytes_held == span_size(root)
    assert assembler.pop_ready() is not None and assembler.bytes_held == 0
