"""Benchmark: `grade-traces` over an archive of OpenInference traces, beside the raw parse and
beside re-running the agent.

Builds an archive in the Collector's file format: a plain LangGraph app (the reference support
desk test project's agent, one tool call per question) instrumented with
openinference-instrumentation-langchain answers the dataset's questions once; those traces are
then copied under fresh trace ids until the archive reaches `--mb` megabytes. Then, side by side:

- parse only: every span decoded (`read_spans`), no dialect, no grading;
- read: spans grouped by trace and read into tool-call records (`read_trace_files`);
- grade-traces: the whole command (read, pair, grade tool_usage and trajectory, store, report);
- the agent: the same questions re-run by `tracegrade run` (per question), the cost
  grade-traces saves.

Peak memory (ru_maxrss) is printed after each phase. The reader holds every trace of the
archive until it is grouped (see docs/production.md), so memory grows with the archive.

    .venv/bin/python bench/traces.py [--mb 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from tests.runs_support import QUESTIONS, write_project  # noqa: E402
from tracegrade.cli import main  # noqa: E402
from tracegrade.traces.archive import read_trace_files  # noqa: E402
from tracegrade.traces.spans import ReadProblems, read_spans  # noqa: E402

IDS = ("paris", "rome", "cancel")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_archive(root: Path, config: Path, mb: float) -> tuple[Path, int]:
    import importlib.util

    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tracegrade.capture.tracefile import TraceFileExporter

    seed = root / "seed.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(seed)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    spec = importlib.util.spec_from_file_location("bench_app", config.parent / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    graph = module.build_graph()
    for qid in IDS:
        asyncio.run(graph.ainvoke({"messages": [("user", QUESTIONS[qid]["input"])]}))
    instrumentor.uninstrument()
    provider.shutdown()
    lines = seed.read_text().splitlines()
    by_trace: dict[str, list[str]] = {}
    for line in lines:
        trace = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
        by_trace.setdefault(trace, []).append(line)
    archive = root / "archive" / "traces.jsonl"
    archive.parent.mkdir()
    traces = 0
    with archive.open("w") as out:
        while out.tell() < mb * 1024 * 1024:
            for trace, group in by_trace.items():
                fresh = secrets.token_hex(16)
                for line in group:
                    out.write(line.replace(trace, fresh) + "\n")
                traces += 1
    return archive, traces


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=20.0)
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
        archive, traces = build_archive(root, config, args.mb)
        size = archive.stat().st_size / 1024 / 1024
        print(f"archive: {size:.1f} MB, {traces} traces (OpenInference, collector format)")

        started = time.perf_counter()
        spans = sum(1 for _ in read_spans(archive, ReadProblems()))
        parse_s = time.perf_counter() - started
        print(
            f"parse only:    {parse_s:7.2f} s  {spans / parse_s:9.0f} spans/s  "
            f"{size / parse_s:6.1f} MB/s  peak {peak_mb():.0f} MB"
        )
        started = time.perf_counter()
        read = read_trace_files([archive])
        read_s = time.perf_counter() - started
        print(
            f"read records:  {read_s:7.2f} s  {len(read.traces) / read_s:9.0f} traces/s  "
            f"peak {peak_mb():.0f} MB"
        )
        del read
        started = time.perf_counter()
        code = main(
            ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
        )
        grade_s = time.perf_counter() - started
        print(
            f"grade-traces:  {grade_s:7.2f} s  {traces / grade_s:9.0f} traces/s  exit {code}  "
            f"peak {peak_mb():.0f} MB"
        )
        started = time.perf_counter()
        main(["run", "--config", str(config), "--quiet"])
        run_s = (time.perf_counter() - started) / len(IDS)
        print(
            f"agent re-run:  {run_s * 1000:7.1f} ms per question (tracegrade run, scripted model)"
        )
        per_trace = grade_s / traces
        print(
            f"ratio: grade-traces {per_trace * 1000:.2f} ms per trace vs the agent "
            f"{run_s * 1000:.1f} ms per question = {run_s / per_trace:.0f}x faster; "
            f"parse alone is {grade_s / parse_s:.1f}x faster than grade-traces"
        )


if __name__ == "__main__":
    main_bench()
