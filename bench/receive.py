"""Benchmark: `tracegrade receive` ingesting and grading OpenInference traces over real HTTP on
loopback, beside the parse alone and beside the raw agent that makes such traces.

A plain LangGraph app (the reference test project's agent) instrumented with
openinference-instrumentation-langchain answers the dataset's three questions once; its spans
are copied under fresh trace ids into protobuf `ExportTraceServiceRequest` bodies of about
`--batch` spans (what the official exporter's batch processor sends). Everything is encoded and
the HTTP client built before the timed region. Then:

- parse only: the bodies decoded in this process (`ingest.decode_request`), no HTTP;
- receive: `tracegrade receive` in its own process (one core), the bodies posted back to back
  on one keep-alive connection; ingest rate = spans / time to answer every request;
- receive + grade: from the first request until the receiver has graded every trace
  (tool_usage and trajectory: deterministic graders) and exited after SIGTERM;
- the raw agent: the same questions invoked on the plain app (instrumented, exporting to
  nothing), the spans per second one agent process makes.

    .venv/bin/python bench/receive.py [--spans 100000] [--batch 512] [--workers 2] [--burst-only]

- receive + grade with `--workers N` beside one process, `--rounds` rounds interleaved (the
  order swapped each round), each round's ratio printed and then the median and range: by wall
  clock, and by CPU (each process's CPU seconds from schedstat: what the work takes on free
  cores), with the time each process waited for a CPU. On a machine other sessions load, Linux
  gives a session's processes one share between them (autogroup), so there the wall ratio is
  the cost of the work, not the parallelism: the waiting share printed says how loaded it was.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from tests.runs_support import QUESTIONS, write_project  # noqa: E402

IDS = ("paris", "rome", "cancel")


def _app(config: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_app", config.parent / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_graph()


def seed_spans(config: Path) -> tuple[list[list[dict]], float]:
    """Each question's OpenInference trace (OTLP/JSON spans), and the raw agent's seconds per
    question (instrumented, its spans going nowhere but memory)."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracegrade.capture.tracefile import encode_spans

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    graph = _app(config)
    try:
        for qid in IDS:  # warm up, and the seed traces
            asyncio.run(graph.ainvoke({"messages": [("user", QUESTIONS[qid]["input"])]}))
        seeds = list(memory.get_finished_spans())
        rounds = 20
        started = time.perf_counter()
        for _ in range(rounds):
            for qid in IDS:
                asyncio.run(graph.ainvoke({"messages": [("user", QUESTIONS[qid]["input"])]}))
        agent_s = (time.perf_counter() - started) / (rounds * len(IDS))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    request = encode_spans(seeds)
    by_trace: dict[str, list[dict]] = {}
    for rs in request["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                by_trace.setdefault(s["traceId"], []).append(s)
    return list(by_trace.values()), agent_s


def bodies(traces: list[list[dict]], spans: int, batch: int) -> tuple[list[bytes], int, int]:
    """Protobuf request bodies of about `batch` spans, `spans` in all, fresh trace ids."""
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    out, current, total, count = [], [], 0, 0
    while total < spans:
        for trace in traces:
            fresh = secrets.token_bytes(16)
            for s in trace:
                copy = dict(s)
                copy["traceId"] = base64.b64encode(fresh).decode()
                for key in ("spanId", "parentSpanId"):
                    if copy.get(key):
                        copy[key] = base64.b64encode(bytes.fromhex(copy[key])).decode()
                current.append(copy)
            total += len(trace)
            count += 1
            if len(current) >= batch:
                out.append(_encode(current, json_format, ExportTraceServiceRequest))
                current = []
    if current:
        out.append(_encode(current, json_format, ExportTraceServiceRequest))
    return out, total, count


def _encode(spans: list[dict], json_format, request_type) -> bytes:
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    return json_format.ParseDict(request, request_type()).SerializeToString()


def _receiver(config: Path, spans: int, traces: int, *, sample: float, workers: int = 0):
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tracegrade", "receive", "--config", str(config)),
            *("--target", "t", "--port", "0", "--quiet", "--quiet-period", "1"),
            *("--sample", str(sample), "--max-spans", str(max(1_000_000, spans * 2))),
            *("--max-traces", str(traces * 2)),
            *(("--workers", str(workers)) if workers else ()),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=ROOT,
    )
    line = process.stdout.readline()
    return process, line.split("listening on ", 1)[1].split(";", 1)[0]


def _sched(pid: int) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable and waiting for one) of process `pid`, all its
    threads (Linux schedstat)."""
    cpu = wait = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            on, waited, _ = (task / "schedstat").read_text().split()
            cpu, wait = cpu + int(on) / 1e9, wait + int(waited) / 1e9
    return cpu, wait


@dataclass(frozen=True, slots=True)
class Burst:
    ingest_s: float
    graded_s: float
    """From the first request until every trace was graded, less the quiet period."""
    wall_s: float
    used: list[tuple[float, float]]
    """Each process's (seconds on a CPU, seconds waiting for one): the receiver first."""

    def free_cores_s(self, cores: int) -> float:
        """How long the work would take on `cores` free cores: its CPU seconds spread over
        them, or its busiest process's, whichever is longer."""
        cpus = [cpu for cpu, _ in self.used]
        return max(sum(cpus) / min(cores, len(cpus)), *cpus)

    @property
    def waiting(self) -> float:
        """The share of its processes' time spent runnable but waiting for a CPU."""
        cpu, wait = (sum(x) for x in zip(*self.used, strict=True))
        return wait / (cpu + wait) if cpu + wait else 0.0


def _spread(values: list[float], unit: str = "") -> str:
    """The median, and the range, of a figure measured in several rounds."""
    fmt = "{:.2f}" if unit else "{:.0f}"
    low, mid, high = (
        fmt.format(v) + unit for v in (min(values), statistics.median(values), max(values))
    )
    return f"{mid} (median; {low}..{high})"


def _stop(process) -> None:
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=3600)


def main_bench() -> None:
    import httpx

    from tracegrade.traces.live.ingest import PROTOBUF, decode_request

    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--rate", type=float, default=5_000.0, help="sustained spans/s offered")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long it is offered")
    parser.add_argument("--workers", type=int, default=2, help="grading processes beside one")
    parser.add_argument("--rounds", type=int, default=3, help="bursts of each, interleaved")
    parser.add_argument("--burst-only", action="store_true", help="leave out the paced run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        for qid in IDS:
            row = dict(QUESTIONS[qid])
            row["trajectory"] = {"calls": [{"tool": "lookup" if qid != "cancel" else "cancel"}]}
            rows.append(row)
        config = write_project(
            root / "proj",
            questions=[],
            extra_questions=rows,
            target={"graders": ["tool_usage_grader", "trajectory_grader"], "concurrency": 1},
        )
        seeds, agent_s = seed_spans(config)
        per_trace = sum(len(t) for t in seeds) / len(seeds)
        payload, spans, traces = bodies(seeds, args.spans, args.batch)
        size = sum(map(len, payload)) / 1024 / 1024
        print(
            f"load: {spans} spans in {traces} traces ({per_trace:.1f} spans per trace), "
            f"{len(payload)} protobuf requests of ~{args.batch} spans, {size:.1f} MB"
        )

        started = time.perf_counter()
        parsed = sum(len(decode_request(b, PROTOBUF)) for b in payload)
        parse_s = time.perf_counter() - started
        assert parsed == spans
        print(f"parse only:        {parse_s:7.2f} s  {spans / parse_s:9.0f} spans/s")

        headers = {"content-type": PROTOBUF}

        def burst(workers: int) -> Burst:
            """A burst, every trace graded (--sample 1): how fast ingest goes, and how fast
            the deterministic graders work through what arrived."""
            process, url = _receiver(config, spans, traces, sample=1.0, workers=workers)
            status_url = url.replace("/v1/traces", "/status")
            with httpx.Client(timeout=60) as client:
                client.post(url, content=b"", headers=headers)  # the connection, before the clock
                pids = [process.pid, *client.get(status_url).json()["workers"]]
                before = [_sched(pid) for pid in pids]
                started = time.perf_counter()
                for body in payload:
                    response = client.post(url, content=body, headers=headers)
                    assert response.status_code == 200 and not response.content, response
                ingest_s = time.perf_counter() - started
                while client.get(status_url).json()["traces_graded"] < traces:
                    time.sleep(0.05)
                wall = time.perf_counter() - started
                after = [_sched(pid) for pid in pids]
            _stop(process)
            used = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(before, after, strict=True)]
            return Burst(ingest_s, wall - 1.0, wall, used)  # graded: less the quiet period

        # One process and --workers N, interleaved (the order swapped each round), so both see
        # the same load; each round's ratio is reported, then their median and spread.
        cores = os.cpu_count() or 1
        results: dict[int, list[Burst]] = {0: [], args.workers: []}
        for r in range(args.rounds):
            for workers in (0, args.workers) if r % 2 == 0 else (args.workers, 0):
                results[workers].append(burst(workers))
            one, many = results[0][-1], results[args.workers][-1]
            print(
                f"round {r + 1}: one process {spans / one.graded_s:6.0f} spans/s, --workers "
                f"{args.workers} {spans / many.graded_s:6.0f} spans/s: {one.graded_s / many.graded_s:.2f}x "
                f"by wall, {one.free_cores_s(cores) / many.free_cores_s(cores):.2f}x by CPU; "
                f"waiting for a CPU: one process {one.waiting:.0%}, --workers "
                f"{args.workers} {many.waiting:.0%} of their time (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        for workers, bursts in results.items():
            who = f"--workers {workers}" if workers else "one process"
            ingest = _spread([spans / b.ingest_s for b in bursts])
            graded = _spread([spans / b.graded_s for b in bursts])
            print(f"receive (ingest), {who:12s} {ingest} spans/s (burst, one connection)")
            print(
                f"receive + grade,  {who:12s} {graded} spans/s (--sample 1, tool_usage + "
                "trajectory)"
            )
        pairs = list(zip(results[0], results[args.workers], strict=True))
        by_wall = _spread([one.graded_s / many.graded_s for one, many in pairs], "x")
        by_cpu = _spread(
            [one.free_cores_s(cores) / many.free_cores_s(cores) for one, many in pairs], "x"
        )
        print(
            f"--workers {args.workers} / one process, {args.rounds} interleaved rounds "
            f"({cores} cores): by wall {by_wall}; by CPU on {cores} free cores {by_cpu}"
        )
        for workers, bursts in results.items():
            who = f"--workers {workers}" if workers else "one process"
            parts = []
            for k in range(len(bursts[0].used)):
                name = "receiver" if k == 0 else f"worker {k}"
                cpu = statistics.median(b.used[k][0] for b in bursts)
                wait = statistics.median(b.used[k][1] for b in bursts)
                parts.append(f"{name} {cpu:.2f} s on a CPU + {wait:.2f} s waiting for one")
            print(f"CPU, {who} (median): " + "; ".join(parts))
        # A session's processes share one scheduler group (Linux autogroup): on a machine
        # others load, N processes get about the CPU one gets, so the wall ratio there says
        # what the work costs, not what N cores give. The CPU ratio is what free cores give.
        ratio, waiting = (
            statistics.median(one.graded_s / many.graded_s for one, many in pairs),
            statistics.median(b.waiting for b in results[args.workers]),
        )
        if waiting > 0.25:
            print(
                f"note: the --workers {args.workers} processes waited for a CPU {waiting:.0%} of "
                f"the time (load {os.getloadavg()[0]:.1f} on {cores} cores): the wall ratio "
                f"({ratio:.2f}x) is the scheduler's share, not the parallelism; read the CPU "
                "ratio"
            )
        ingest_s = statistics.median(b.ingest_s for b in results[0])
        graded_s = statistics.median(b.graded_s for b in results[0])
        if args.burst_only:
            return
        # B: sustained, paced at --rate spans/s for --seconds, grading a share that keeps up
        sample = min(1.0, 0.8 * (spans / graded_s) / args.rate)
        del payload
        payload, spans_b, traces_b = bodies(seeds, int(args.rate * args.seconds), args.batch)
        process, url = _receiver(config, spans_b, traces_b, sample=sample)
        status_url = url.replace("/v1/traces", "/status")
        per_request = spans_b / len(payload)
        interval = per_request / args.rate
        backlog = []
        with httpx.Client(timeout=60) as client:
            client.post(url, content=b"", headers=headers)
            started = time.perf_counter()
            sent = 0
            while sent < len(payload):  # fresh trace ids all the way
                body = payload[sent]
                response = client.post(url, content=body, headers=headers)
                assert response.status_code == 200 and not response.content, response
                sent += 1
                if sent % 20 == 0:
                    state = client.get(status_url).json()
                    backlog.append(state["traces_ready"])
                wait = started + sent * interval - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            paced_s = time.perf_counter() - started
            state = client.get(status_url).json()
        _stop(process)
        offered = sent * per_request / paced_s
        print(
            f"sustained:        {paced_s:7.2f} s  {offered:9.0f} spans/s offered and answered "
            f"(--sample {sample:.2f}: {state['traces_graded']} traces graded, ready-to-grade "
            f"backlog max {max(backlog, default=0)}, at the end {state['traces_ready']})"
        )
        agent_spans = per_trace / agent_s
        print(
            f"raw agent:         {agent_s * 1000:7.2f} ms per question  {agent_spans:9.0f} "
            "spans/s (one agent process, scripted model, OpenInference in memory)"
        )
        print(
            f"ratios: ingest {spans / ingest_s / agent_spans:.1f}x and ingest+grade "
            f"{spans / graded_s / agent_spans:.1f}x the spans one raw agent makes; parse alone "
            f"is {ingest_s / parse_s:.1f}x faster than ingest over HTTP"
        )


if __name__ == "__main__":
    main_bench()
