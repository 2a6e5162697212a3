"""`tracegrade receive`: OTLP/HTTP on loopback (real uvicorn, real HTTP), each agent trace graded
as it completes into a monitor run with the verdicts `tracegrade run` gives the same agent;
the OTLP/HTTP answers (415, 400, 413, 401, partial success, gzip); the bounds counted; the
forwarder; a graceful stop, a kill -9 mid-batch and a restart that grades nothing twice."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.runs_support import QUESTIONS
from tests.test_grade_traces import (
    _calls,
    _genai_request,
    _genai_trace,
    _load_agent,
    _project,
    _verdicts,
)
from tracegrade import load_config
from tracegrade.cli import main
from tracegrade.reports.json_report import build_json_report
from tracegrade.rundir.store import ResultStore
from tracegrade.traces.live.assembly import Assembler, Limits, sampled
from tracegrade.traces.live.monitor import Monitor
from tracegrade.traces.live.receiver import Receiver, ReceiverOptions, bind
from tracegrade.traces.spans import Span

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def receiving(config_path: Path, run=None, **options):
    """A receiver on a free loopback port, serving in a thread; stopped (and its outcome
    decided) when the block ends."""
    limits = options.pop("limits", None) or Limits(quiet_s=0.1)
    policy = options.pop("policy", None)
    conversations = options.pop("conversations", None)
    monitor = Monitor(
        load_config(config_path),
        "t",
        run=run,
        sample=limits.sample,
        policy=policy,
        conversations=conversations,
    )
    receiver = Receiver(
        monitor,
        bind("127.0.0.1", 0),
        ReceiverOptions(limits=limits, tick_s=0.05, **options),
        announce=lambda _text: None,
    )
    thread = threading.Thread(target=receiver.run, daemon=True)
    thread.start()
    # worker processes start slowly on a loaded machine: wait generously, but not for a
    # receiver that already died
    _wait_for(lambda: receiver.started.is_set() or not thread.is_alive(), seconds=300)
    assert receiver.started.is_set(), "the receiver stopped before it listened"
    try:
        yield receiver, f"http://127.0.0.1:{receiver.port}/v1/traces"
    finally:
        receiver.stop()
        thread.join(60)
        assert not thread.is_alive()


def _wait_for(predicate, seconds: float = 30.0, describe=None) -> None:
    """Wait until `predicate()`; past `seconds`, fail with what `describe()` says of the state."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting: {describe() if describe else ''}")
        time.sleep(0.02)


def _graded(receiver) -> int:
    return sum(c.get("graded", 0) for c in receiver.monitor.rollups.values())


def _trace(trace_id: str, qid: str = "paris", *, tool: str = "lookup") -> dict:
    args = {"city": "Paris"} if tool == "lookup" else {"booking_id": "B100"}
    return _genai_request(
        _genai_trace(trace_id, qid, calls=[(tool, "c1", args)], ran=[(tool, "c1", 0)])
    )


def _without_root(request: dict) -> tuple[dict, dict]:
    """The request split in two: every span but the root, and the root alone."""
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = [s for s in spans if "parentSpanId" not in s]
    rest = [s for s in spans if "parentSpanId" in s]
    return _genai_request(rest), _genai_request(root)


# -- end to end ---------------------------------------------------------------------------
def test_a_plain_app_exporting_live_with_the_official_exporter_gets_the_verdicts_run_gives(
    tmp_path,
):
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    run_code = main(["run", "--config", str(config), "--quiet", "--json", str(ran)])
    with receiving(config) as (receiver, url):
        provider = TracerProvider()
        # protobuf, gzip: what the official OTLP/HTTP exporter sends by default in production
        exporter = OTLPSpanExporter(endpoint=url, compression=Compression.Gzip)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            import asyncio

            graph = _load_agent(tmp_path / "proj").build_graph()
            for qid in ("paris", "rome", "cancel"):
                asyncio.run(graph.ainvoke({"messages": [("user", QUESTIONS[qid]["input"])]}))
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
        _wait_for(lambda: _graded(receiver) == 3)
    report, ran_report = build_json_report(receiver.outcome), json.loads(ran.read_text())
    assert run_code == 2 and receiver.outcome.exit_code == run_code
    assert len(_verdicts(ran_report)) == 6
    assert _verdicts(report) == _verdicts(ran_report)
    assert _calls(report) == _calls(ran_report)
    assert report["gate"] == ran_report["gate"]
    # the monitor run is a normal run: `show` gives the same verdict and the hour's rollup
    shown = tmp_path / "shown.json"
    code = main(["show", str(receiver.monitor.run_dir), "--quiet", "--json", str(shown)])
    shown_report = json.loads(shown.read_text())
    assert code == run_code and _verdicts(shown_report) == _verdicts(ran_report)
    (hour,) = shown_report["monitor"]["hours"].values()
    assert hour["graded"] == 3 and hour["passed"] == 2 and hour["failed"] == 1
    assert any(
        n.startswith("monitor, all hours: 3 graded, 2 passed, 1 failed")
        for n in shown_report["notes"]
    )


# -- the OTLP/HTTP answers ----------------------------------------------------------------
def test_json_and_protobuf_requests_are_answered_in_their_own_encoding(tmp_path):
    from google.protobuf import json_format
    from google.rpc.status_pb2 import Status
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    config = _project(tmp_path / "proj")
    with receiving(config) as (receiver, url):
        ok = httpx.post(url, json=_trace("1" * 32), timeout=LOOPBACK_TIMEOUT_S)
        assert ok.status_code == 200 and ok.headers["content-type"] == "application/json"
        assert ok.json() == {}
        request = _trace("2" * 32, "cancel", tool="cancel")
        for s in request["resourceSpans"][0]["scopeSpans"][0]["spans"]:  # protobuf: bytes ids
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in s:
                    s[key] = __import__("base64").b64encode(bytes.fromhex(s[key])).decode()
        body = json_format.ParseDict(request, ExportTraceServiceRequest()).SerializeToString()
        proto = httpx.post(
            url,
            content=body,
            headers={"content-type": "application/x-protobuf"},
            timeout=LOOPBACK_TIMEOUT_S,
        )
        assert proto.status_code == 200
        assert proto.headers["content-type"] == "application/x-protobuf"
        assert not ExportTraceServiceResponse.FromString(proto.content).HasField("partial_success")
        # 415 for an encoding OTLP/HTTP does not have; 400 with a Status for a bad body
        assert (
            httpx.post(
                url,
                content=b"{}",
                headers={"content-type": "text/plain"},
                timeout=LOOPBACK_TIMEOUT_S,
            ).status_code
            == 415
        )
        bad = httpx.post(
            url,
            content=b"\xff\x00garbage",
            headers={"content-type": "application/x-protobuf"},
            timeout=LOOPBACK_TIMEOUT_S,
        )
        assert bad.status_code == 400
        assert "ExportTraceServiceRequest" in Status.FromString(bad.content).message
        bad_json = httpx.post(
            url,
            content=b"[1, 2]",
            headers={"content-type": "application/json"},
            timeout=LOOPBACK_TIMEOUT_S,
        )
        assert bad_json.status_code == 400 and "not an OTLP/JSON" in bad_json.json()["message"]
        assert httpx.get(url, timeout=LOOPBACK_TIMEOUT_S).status_code == 405
        _wait_for(lambda: _graded(receiver) == 2)
    assert receiver.counts["requests_refused"] == 3


def test_gzip_bodies_are_inflated_and_oversized_ones_are_413_before_they_are_held(tmp_path):
    config = _project(tmp_path / "proj")
    with receiving(config, max_body=64 * 1024) as (receiver, url):
        zipped = gzip.compress(json.dumps(_trace("1" * 32)).encode())
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        assert (
            httpx.post(url, content=zipped, headers=headers, timeout=LOOPBACK_TIMEOUT_S).status_code
            == 200
        )
        big = b'{"resourceSpans": []' + b" " * (128 * 1024) + b"}"
        too_big = httpx.post(
            url,
            content=big,
            headers={"content-type": "application/json"},
            timeout=LOOPBACK_TIMEOUT_S,
        )
        assert too_big.status_code == 413
        bomb = gzip.compress(big * 64)  # 8 MB of spaces inflating from a few KB
        assert len(bomb) < 64 * 1024
        assert (
            httpx.post(url, content=bomb, headers=headers, timeout=LOOPBACK_TIMEOUT_S).status_code
            == 413
        )
        truncated = httpx.post(
            url, content=zipped[:-10], headers=headers, timeout=LOOPBACK_TIMEOUT_S
        )
        assert truncated.status_code == 400
        other = {"content-type": "application/json", "content-encoding": "br"}
        assert (
            httpx.post(url, content=b"{}", headers=other, timeout=LOOPBACK_TIMEOUT_S).status_code
            == 415
        )
        _wait_for(lambda: _graded(receiver) == 1)


def test_with_a_token_a_request_without_it_is_401(tmp_path):
    config = _project(tmp_path / "proj")
    with receiving(config, token="s3cret") as (receiver, url):
        assert httpx.post(url, json=_trace("1" * 32), timeout=LOOPBACK_TIMEOUT_S).status_code == 401
        wrong = httpx.post(
            url,
            json=_trace("1" * 32),
            headers={"authorization": "Bearer nope"},
            timeout=LOOPBACK_TIMEOUT_S,
        )
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        good = httpx.post(
            url,
            json=_trace("1" * 32),
            headers={"authorization": "Bearer s3cret"},
            timeout=LOOPBACK_TIMEOUT_S,
        )
        assert good.status_code == 200
        _wait_for(lambda: _graded(receiver) == 1)
        status = url.replace("/v1/traces", "/status")
        assert httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).status_code == 401
        state = httpx.get(
            status, headers={"authorization": "Bearer s3cret"}, timeout=LOOPBACK_TIMEOUT_S
        ).json()
        assert state["traces_graded"] == 1 and state["traces_held"] == 0
    assert receiver.counts["requests_unauthorized"] == 2 and receiver.counts["spans_received"] == 4


# -- the bounds ---------------------------------------------------------------------------
def test_the_trace_cap_refuses_spans_as_a_partial_success_and_the_gate_is_incomplete(tmp_path):
    config = _project(tmp_path / "proj")
    limits = Limits(max_traces=1, quiet_s=60.0)
    with receiving(config, limits=limits) as (receiver, url):
        held, _root = _without_root(_trace("1" * 32))
        assert httpx.post(url, json=held, timeout=LOOPBACK_TIMEOUT_S).json() == {}
        refused = httpx.post(url, json=_trace("2" * 32), timeout=LOOPBACK_TIMEOUT_S).json()
        assert refused["partialSuccess"]["rejectedSpans"] == "4"
        assert "holds at most 1 traces" in refused["partialSuccess"]["errorMessage"]
    counts = receiver.counts
    assert counts["traces_dropped_cap"] == 1 and counts["agent_traces_dropped"] == 1
    # dropped agent spans make the verdict incomplete, and the notes say what was dropped
    assert receiver.outcome.exit_code == 3
    notes = " ".join(receiver.outcome.notes)
    assert "1 traces dropped at the memory cap" in notes and "2" * 32 in notes
    # the trace still waiting for its root was kept for the next start
    assert (receiver.monitor.run_dir / "pending.jsonl").is_file()


def test_a_trace_whose_root_never_arrives_is_dropped_at_the_timeout_and_counted(tmp_path):
    config = _project(tmp_path / "proj")
    limits = Limits(quiet_s=0.05, timeout_s=0.3)
    with receiving(config, limits=limits) as (receiver, url):
        held, _root = _without_root(_trace("1" * 32))
        httpx.post(url, json=held, timeout=LOOPBACK_TIMEOUT_S)
        _wait_for(lambda: receiver.counts["traces_dropped_timeout"] == 1)
        # a span of it arriving later is not the start of a new, partial trace
        _held, root = _without_root(_trace("1" * 32))
        httpx.post(url, json=root, timeout=LOOPBACK_TIMEOUT_S)
        httpx.post(url, json=_trace("2" * 32), timeout=LOOPBACK_TIMEOUT_S)
        _wait_for(lambda: _graded(receiver) == 1)
    assert receiver.counts["spans_dropped"] == 4 and receiver.counts["agent_traces_dropped"] == 1
    assert "1 traces dropped at the timeout" in " ".join(receiver.outcome.notes)
    assert receiver.outcome.exit_code == 3


def test_a_trace_past_the_span_cap_per_trace_is_dropped_whole():
    assembler = Assembler(Limits(max_spans_per_trace=3))
    spans = [Span("a" * 32, f"{n:016x}", "f" * 16, "s", 0, 1, {}) for n in range(5)]
    assert assembler.add(spans) == 2  # the fourth refused, the trace dropped, the fifth too
    assert assembler.counts["traces_dropped_too_large"] == 1
    assert assembler.spans_held == 0 and not assembler.held


# -- sampling -----------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(
    trace_id=st.binary(min_size=16, max_size=16).map(bytes.hex),
    low=st.floats(0.0, 1.0),
    high=st.floats(0.0, 1.0),
)
def test_sampling_is_decided_by_the_trace_id_alone_and_keeps_more_at_a_higher_rate(
    trace_id, low, high
):
    low, high = min(low, high), max(low, high)
    assert sampled(trace_id, low) == sampled(trace_id.upper(), low)  # the same id, any case
    if sampled(trace_id, low):
        assert sampled(trace_id, high)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.binary(min_size=16, max_size=16).map(bytes.hex), min_size=1, max_size=20, unique=True
    )
)
def test_every_span_of_a_trace_gets_the_same_sampling_answer(trace_ids):
    assembler = Assembler(Limits(sample=0.5, quiet_s=0.0))
    for tid in trace_ids:  # child spans first, in separate requests, then the root
        assembler.add([Span(tid, "1" * 16, "2" * 16, "child", 0, 1, {})])
        assembler.add([Span(tid, "2" * 16, "", "root", 0, 2, {})])
    assembler.collect()
    kept = set()
    while (item := assembler.pop_ready()) is not None:
        assert len(item[1]) == 2  # never half a trace
        kept.add(item[0])
    assert kept == {t for t in trace_ids if sampled(t, 0.5)}


def test_a_sample_keeps_about_that_share_of_traces():
    ids = [f"{n:032x}" for n in range(20_000)]  # sequential ids: the hash spreads them
    share = sum(sampled(t, 0.1) for t in ids) / len(ids)
    assert 0.08 < share < 0.12


# -- forwarding ---------------------------------------------------------------------------
def test_every_request_is_forwarded_unchanged_and_a_dead_endpoint_is_counted(tmp_path):
    config = _project(tmp_path / "proj")
    downstream = _project(tmp_path / "downstream")
    with (
        receiving(downstream) as (sink, sink_url),
        receiving(config, forward=sink_url) as (
            receiver,
            url,
        ),
    ):
        zipped = gzip.compress(json.dumps(_trace("1" * 32)).encode())
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        assert (
            httpx.post(url, content=zipped, headers=headers, timeout=LOOPBACK_TIMEOUT_S).status_code
            == 200
        )
        _wait_for(lambda: _graded(sink) == 1 and _graded(receiver) == 1)
    assert receiver.counts["forwarded"] == 1 and sink.counts["spans_received"] == 4
    dead = bind("127.0.0.1", 0)
    dead_url = f"http://127.0.0.1:{dead.getsockname()[1]}/v1/traces"
    dead.close()
    with receiving(config, forward=dead_url, forward_timeout_s=1.0) as (receiver, url):
        assert httpx.post(url, json=_trace("2" * 32), timeout=LOOPBACK_TIMEOUT_S).status_code == 200
        _wait_for(lambda: receiver.counts["forward_failed"] == 1 and _graded(receiver) == 1)
    assert "1 forward failures" in " ".join(receiver.outcome.notes)


# -- stopping and continuing ----------------------------------------------------------------
def _start_cli(config: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tracegrade", "receive", "--config", str(config)),
            *("--target", "t", "--port", "0", "--quiet-period", "0.2", "--quiet", *extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    line = process.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line + process.stderr.read()
    url = line.split("listening on ", 1)[1].split(";", 1)[0]
    return process, url


_GRADE_THEN_KILL = """
import asyncio, json, os, signal, sys
from tracegrade.inputs.config import load_config
from tracegrade.traces.live.ingest import JSON, decode_request
from tracegrade.traces.live.monitor import Monitor

config, run, requests = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
monitor = Monitor(load_config(config), "t", run=run)
monitor.start()


async def grade(request):
    spans = decode_request(json.dumps(request).encode(), JSON)
    await monitor.grade(spans[0].trace_id, spans)


async def main():
    for request in requests[:2]:
        await grade(request)
    monitor.commit()  # a batch stored, then its rollups, as the receiver's ticker does
    monitor.checkpoint()
    for request in requests[2:]:  # the next batch graded, not committed yet
        await grade(request)
    os.kill(os.getpid(), signal.SIGKILL)


asyncio.run(main())
"""
"""A monitor on run argv[2] that commits a batch of two traces, grades two more and is killed
(SIGKILL) before committing them."""


def test_sigterm_mid_stream_grades_nothing_twice_and_a_restart_continues_the_run(tmp_path):
    config = _project(tmp_path / "proj")
    process, url = _start_cli(config)
    sent, stop = [], threading.Event()

    def stream() -> None:  # complete traces, back to back, until the receiver goes away
        with httpx.Client(timeout=LOOPBACK_TIMEOUT_S) as client:
            n = 0
            while not stop.is_set():
                tid = f"{n + 1:032x}"
                try:
                    if client.post(url, json=_trace(tid)).status_code != 200:
                        return
                except httpx.HTTPError:
                    return
                sent.append(tid)
                n += 1

    held, _ = _without_root(_trace("f" * 32, "cancel", tool="cancel"))
    assert httpx.post(url, json=held, timeout=LOOPBACK_TIMEOUT_S).status_code == 200
    sender = threading.Thread(target=stream)
    sender.start()
    _wait_for(lambda: len(sent) >= 20)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    stop.set()
    sender.join(30)
    assert process.returncode == 0, err
    run_id = next(n for n in out.split() if n.count("-") == 2 and n[:8].isdigit())
    run_dir = tmp_path / "proj" / "runs" / run_id
    with ResultStore.open_readonly(run_dir) as store:
        rows = store.load_runs("t")
    graded = [r.trace_id for r in rows]
    assert sorted(graded) == sorted(sent)  # every answered request graded, each once
    assert sorted(r.trial for r in rows) == list(range(len(sent)))
    assert (run_dir / "pending.jsonl").is_file()
    # kill -9 with a batch graded and not committed: it is lost whole, never half recorded
    batch = [f"e{n:031x}" for n in range(4)]
    requests = json.dumps([_trace(t) for t in batch])
    killed = subprocess.run(
        [sys.executable, "-c", _GRADE_THEN_KILL, str(config), run_id, requests],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with ResultStore.open_readonly(run_dir) as store:
        rows = store.load_runs("t")
    assert sorted(r.trace_id for r in rows) == sorted([*sent, *batch[:2]])
    # restart on the same run: the root of the pending trace completes it; a trace sent again
    # after it was graded is late, not graded twice; the traces the kill lost are graded now
    process, url = _start_cli(
        config, "--run", run_id, "--window", "3", "--gate", "--json", str(tmp_path / "r.json")
    )
    _, root = _without_root(_trace("f" * 32, "cancel", tool="cancel"))
    assert httpx.post(url, json=root, timeout=LOOPBACK_TIMEOUT_S).status_code == 200
    for tid in [sent[0], *batch]:
        assert httpx.post(url, json=_trace(tid), timeout=LOOPBACK_TIMEOUT_S).status_code == 200
    out, err = process.communicate(timeout=60)
    report = json.loads((tmp_path / "r.json").read_text())
    assert process.returncode == report["gate"]["exit_code"] == 0, err
    with ResultStore.open_readonly(run_dir) as store:
        rows = store.load_runs("t")
    assert sorted(r.trace_id for r in rows) == sorted([*sent, *batch, "f" * 32])
    paris = sorted(r.trial for r in rows if r.id == "paris")
    assert paris == list(range(len(sent) + len(batch)))  # trials number on, none reused
    assert not (run_dir / "pending.jsonl").exists()
    total = {}
    for hour in report["monitor"]["hours"].values():
        for key, value in hour.items():
            total[key] = total.get(key, 0) + value
    assert total["graded"] == len(rows) and total["spans_late"] == 3 * 4


def test_a_canary_window_exits_with_the_gate(tmp_path):
    config = _project(tmp_path / "proj")
    process, url = _start_cli(config, "--window", "2", "--gate")
    # rome never calls lookup: its must-pass trajectory fails, so the gate fails (exit 2)
    rome = _genai_request(_genai_trace("1" * 32, "rome", calls=[], ran=[]))
    assert httpx.post(url, json=rome, timeout=LOOPBACK_TIMEOUT_S).status_code == 200
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    # and a window with no traffic at all is never a pass: nothing to gate
    process, _url = _start_cli(config, "--window", "0.5", "--gate")
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 5 and "no agent trace was graded in the window" in err


def test_bad_options_are_invalid_input(tmp_path, capsys):
    config = _project(tmp_path / "proj")
    base = ["receive", "--config", str(config), "--target", "t"]
    with pytest.raises(SystemExit) as usage:
        main([*base, "--sample", "0"])
    assert usage.value.code == 4 and "--sample: 0 is not in (0, 1]" in capsys.readouterr().err
    assert main([*base, "--forward", "ftp://x"]) == 4
    assert main(["receive", "--config", str(config), "--target", "nope"]) == 4
    taken = bind("127.0.0.1", 0)
    try:
        assert main([*base, "--port", str(taken.getsockname()[1])]) == 4
        assert "cannot listen on 127.0.0.1" in capsys.readouterr().err
    finally:
        taken.close()
    assert not (tmp_path / "proj" / "runs").exists() or not any(
        (tmp_path / "proj" / "runs").iterdir()
    )
