"""Benchmark: `grade-traces` over archives of OpenInference traces, beside the raw parse and
beside re-running the agent.

Builds an archive in the Collector's file format (under the temporary directory, removed after
each size): a plain LangGraph app (the reference support desk test project's agent, one tool
call per question) instrumented with openinference-instrumentation-langchain answers the
dataset's questions once; those traces are then copied under fresh trace ids until the archive
reaches `--mb` megabytes. Then, for each size, side by side:

- parse only: every span decoded (`read_spans`), no dialect, no grading: its rate is the
  reference grade-traces is held to;
- grade-traces: the whole command (spill, pair, grade tool_usage and trajectory, store,
  verdict, console report) in its own process, with that process's peak RSS (ru_maxrss): the
  spans wait on disk and the verdict is folded from the store, so the peak should be the same
  for every size;
- the agent: the same questions re-run (per question), the cost grade-traces saves.

The last lines put the sizes side by side: parse rate, grade-traces time, the ratio of the two,
the peak RSS, and whether the peak stayed flat. Times are wall clock and CPU seconds (the
process's user + system): on a shared, loaded machine the wall clock says how busy the machine
was, the CPU what the command cost, so the ratios are given in both.

    .venv/bin/python bench/traces.py [--mb 100 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from tests.runs_support import QUESTIONS, write_project  # noqa: E402
from tracegrade.traces.spans import ReadProblems, read_spans  # noqa: E402

IDS = ("paris", "rome", "cancel")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def share(cpu_s: float, wall_s: float) -> str:
    """How much of one core the timed work got: on a loaded machine the wall clock is the
    machine's business, and this says by how much (100%: a quiet core)."""
    return f"{100 * cpu_s / wall_s:.0f}% of a core" if wall_s > 0 else "no time"


def build_archive(root: Path, config: Path, mb: float) -> tuple[Path, int]:
    import importlib.util

    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tracegrade.capture.tracefile import TraceFileExporter

    root.mkdir(parents=True, exist_ok=True)
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
    archive.parent.mkdir(parents=True)
    traces = 0
    with archive.open("w") as out:
        while out.tell() < mb * 1024 * 1024:
            for trace, group in by_trace.items():
                fresh = secrets.token_hex(16)
                for line in group:
                    out.write(line.replace(trace, fresh) + "\n")
                traces += 1
    return archive, traces


def raw_agent_s(root: Path, latency_s: float, rounds: int = 10) -> float:
    """The plain agent (no tracegrade, no instrumentation) invoked on the questions: seconds
    per question, warm."""
    import importlib.util

    config = write_project(root, questions=list(IDS), latency_s=latency_s)
    spec = importlib.util.spec_from_file_location(f"raw_{root.name}", config.parent / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    graph = module.build_graph()

    async def ask_all() -> None:
        for qid in IDS:
            await graph.ainvoke({"messages": [("user", QUESTIONS[qid]["input"])]})

    asyncio.run(ask_all())  # warm
    started = time.perf_counter()
    for _ in range(rounds):
        asyncio.run(ask_all())
    return (time.perf_counter() - started) / (rounds * len(IDS))


def grade_in_child(archive: Path, config: Path) -> tuple[float, float, int, float]:
    """`tracegrade grade-traces` in its own process: seconds (wall, CPU), exit code, peak RSS
    (MB). The wall clock is timed as before this figure had CPU beside it (from the call, the
    CLI imported); the CPU is the whole process's, interpreter and imports too."""
    code = (
        "import resource, sys, time\n"
        "from tracegrade.cli import main\n"
        "t = time.perf_counter()\n"
        f"c = main(['grade-traces', {str(archive)!r}, '--config', {str(config)!r}, "
        "'--target', 't', '--quiet'])\n"
        "s = time.perf_counter() - t\n"
        "print('RESULT', s, c, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT"))
    _, seconds, exit_code, peak = line.split()
    return float(seconds), cpu, int(exit_code), float(peak)


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mb", type=float, nargs="+", default=[100.0, 1000.0], help="archive sizes to grade"
    )
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
        bare_s = raw_agent_s(root / "bare", 0.0)
        run_s = raw_agent_s(root / "slow", 0.05)
        print(
            f"raw agent:     {bare_s * 1000:7.1f} ms per question with an instant scripted "
            f"model, {run_s * 1000:.1f} ms with 50 ms per model call (as bench/run.py)"
        )
        table = []
        for mb in args.mb:
            archive, traces = build_archive(root / f"{mb:g}mb", config, mb)
            size = archive.stat().st_size / 1024 / 1024
            print(f"archive: {size:.1f} MB, {traces} traces (OpenInference, collector format)")
            started, started_cpu = time.perf_counter(), time.process_time()
            spans = sum(1 for _ in read_spans(archive, ReadProblems()))
            parse_s = time.perf_counter() - started
            parse_cpu = time.process_time() - started_cpu
            print(
                f"  parse only:    {parse_s:7.2f} s  {spans / parse_s:9.0f} spans/s  "
                f"{size / parse_s:6.1f} MB/s  (CPU {parse_cpu:.2f} s: {spans / parse_cpu:.0f} "
                f"spans/s, {size / parse_cpu:.1f} MB/s; {share(parse_cpu, parse_s)})"
            )
            grade_s, grade_cpu, code, peak = grade_in_child(archive, config)
            per_trace = grade_s / traces
            print(
                f"  grade-traces:  {grade_s:7.2f} s  {traces / grade_s:9.0f} traces/s  "
                f"{size / grade_s:6.1f} MB/s  (CPU {grade_cpu:.2f} s, {share(grade_cpu, grade_s)})  "
                f"exit {code}  "
                f"peak RSS {peak:.0f} MB (own process, one process: grade-traces has no workers)"
            )
            print(
                f"  ratio: {per_trace * 1000:.2f} ms per trace: {run_s / per_trace:.0f}x faster than "
                f"re-running the agent at 50 ms per model call ({bare_s / per_trace:.1f}x with an "
                f"instant model); grade-traces takes {grade_s / parse_s:.1f}x the parse alone "
                f"({grade_cpu / parse_cpu:.1f}x in CPU)"
            )
            rates = (spans / parse_s, size / parse_s)
            table.append((size, traces, *rates, grade_s, parse_s, peak, grade_cpu, parse_cpu))
            shutil.rmtree(archive.parent.parent, ignore_errors=True)
        print_table(table)


def print_table(rows: list[tuple[float, ...]]) -> None:
    """The sizes side by side: the parse rate, grade-traces' time, their ratio, the peak."""
    print("\nside by side (goal: the same peak RSS for every size, at most 200 MB)")
    print(
        f"  {'archive':>9}  {'traces':>7}  {'parse spans/s':>13}  {'parse MB/s':>10}  "
        f"{'grade-traces s':>14}  {'(CPU s)':>8}  {'grade/parse':>11}  {'(CPU)':>6}  "
        f"{'peak RSS MB':>11}"
    )
    for size, traces, spans_rate, mb_rate, grade_s, parse_s, peak, grade_cpu, parse_cpu in rows:
        print(
            f"  {size:7.0f}MB  {traces:7d}  {spans_rate:13.0f}  {mb_rate:10.1f}  "
            f"{grade_s:14.2f}  {grade_cpu:8.2f}  {grade_s / parse_s:10.1f}x  "
            f"{grade_cpu / parse_cpu:5.1f}x  {peak:11.0f}"
        )
    peaks = [row[6] for row in rows]
    if len(peaks) > 1:
        print(
            f"  peak RSS from {peaks[0]:.0f} to {peaks[-1]:.0f} MB "
            f"({peaks[-1] - peaks[0]:+.0f} MB) over a {rows[-1][0] / rows[0][0]:.0f}x larger archive"
        )


if __name__ == "__main__":
    main_bench()
