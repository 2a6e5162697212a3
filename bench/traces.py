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
- grade-traces --workers N (`--workers`, 2 by default) beside it in one process, `--rounds`
  rounds interleaved (the order swapped each round, so both see the same load), each with the
  CPU of every process it started (the grading workers and their fork server: read from /proc
  every 50 ms) and the peak of the summed RSS of them all (parent + children, sampled alike:
  shared pages counted in each process, so an upper bound). On a machine other sessions load,
  Linux gives a session's processes one share between them (autogroup): there N workers get
  about one process's CPU, and the wall clock says so.
- the agent: the same questions re-run (per question), the cost grade-traces saves.

The last lines put the sizes side by side: parse rate, grade-traces time, the ratio of the two,
the peak RSS, and whether the peak stayed flat. Times are wall clock and CPU seconds (the
process's user + system): on a shared, loaded machine the wall clock says how busy the machine
was, the CPU what the command cost, so the ratios are given in both.

    .venv/bin/python bench/traces.py [--mb 100 1000] [--workers 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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


def cores() -> int:
    return len(os.sched_getaffinity(0))


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it (Linux: each task's `children`)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:  # it ended meanwhile
            continue
    return out


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeWatch(threading.Thread):
    """Samples the process tree under `pid` every `every` seconds: the peak of its summed RSS
    and of its summed PSS (bytes: shared pages divided among the processes sharing them, so
    the workers forked from one server are not each charged its pages), and each process's CPU
    seconds (utime + stime) when last seen."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak = self.pss_peak = 0
        self.cpu: dict[int, float] = {}
        self.done = threading.Event()
        self._tick = os.sysconf("SC_CLK_TCK")
        self._page = os.sysconf("SC_PAGE_SIZE")

    def run(self) -> None:
        while not self.done.is_set():
            rss = pss = 0
            for p in _tree(self.pid):
                try:
                    with open(f"/proc/{p}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                self.cpu[p] = (int(fields[11]) + int(fields[12])) / self._tick
                rss += int(fields[21]) * self._page
                pss += _pss(p)
            self.peak = max(self.peak, rss)
            self.pss_peak = max(self.pss_peak, pss)
            self.done.wait(self.every)


def grade_in_child(archive: Path, config: Path, workers: int = 0) -> dict[str, float]:
    """`tracegrade grade-traces` (`--workers N` when `workers`) in its own process: seconds
    (wall: from the call, the CLI imported), CPU seconds (the process's own, interpreter and
    imports too, plus what its workers and their fork server used), exit code, its own peak
    RSS and the peak of the summed RSS of it and every process it started (MB)."""
    extra = f", '--workers', '{workers}'" if workers else ""
    code = (
        "import resource, sys, time\n"
        "from tracegrade.cli import main\n"
        "t = time.perf_counter()\n"
        f"c = main(['grade-traces', {str(archive)!r}, '--config', {str(config)!r}, "
        f"'--target', 't', '--quiet'{extra}])\n"
        "s = time.perf_counter() - t\n"
        "print('RESULT', s, c, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    watch = TreeWatch(process.pid)
    watch.start()
    out, err = process.communicate()
    watch.done.set()
    watch.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    others = sum(cpu for pid, cpu in watch.cpu.items() if pid != process.pid)
    line = next((x for x in out.decode().splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise SystemExit(f"grade-traces failed:\n{err.decode()[-3000:]}")
    _, seconds, exit_code, peak = line.split()
    return {
        "wall": float(seconds),
        "cpu": own_cpu + others,
        "own_cpu": own_cpu,
        "code": int(exit_code),
        "own_peak": float(peak),
        "tree_peak": max(watch.peak / 2**20, float(peak)),
        "tree_pss": watch.pss_peak / 2**20,
    }


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mb", type=float, nargs="+", default=[100.0, 1000.0], help="archive sizes to grade"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="grading processes, beside one process"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds of one process and --workers"
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
            kinds = (0, args.workers)
            runs: dict[int, list[dict[str, float]]] = {k: [] for k in kinds}
            for n in range(args.rounds):  # interleaved, the order swapped each round
                for workers in kinds if n % 2 == 0 else kinds[::-1]:
                    runs[workers].append(grade_in_child(archive, config, workers))
                one, many = runs[0][-1], runs[args.workers][-1]
                print(
                    f"  round {n + 1}: one process {one['wall']:.2f} s (CPU {one['cpu']:.2f} s), "
                    f"--workers {args.workers} {many['wall']:.2f} s (CPU {many['cpu']:.2f} s: "
                    f"{many['own_cpu']:.2f} s in the parent): "
                    f"{one['wall'] / many['wall']:.2f}x by wall"
                )
            medians = {
                k: {f: statistics.median(r[f] for r in runs[k]) for f in runs[k][0]} for k in kinds
            }
            for workers in kinds:
                m = medians[workers]
                label = f"--workers {workers}" if workers else "one process"
                codes = sorted({int(r["code"]) for r in runs[workers]})
                print(
                    f"  grade-traces, {label:<12} {m['wall']:7.2f} s  "
                    f"{traces / m['wall']:7.0f} traces/s  {size / m['wall']:6.1f} MB/s  "
                    f"(CPU {m['cpu']:.2f} s, {share(m['cpu'], m['wall'])})  exit {codes}  "
                    f"peak RSS {m['tree_peak']:.0f} MB (parent + children; PSS "
                    f"{m['tree_pss']:.0f} MB; parent alone {m['own_peak']:.0f} MB)"
                )
            one, many = medians[0], medians[args.workers]
            # on free cores the parent's own CPU is the least the command can take (it reads,
            # pairs and folds the verdict alone), and the total CPU spread over the cores
            floor = max(many["own_cpu"], many["cpu"] / max(1, min(args.workers + 1, cores())))
            print(
                f"  on {cores()} free core(s): one process needs {one['cpu']:.2f} s of CPU; "
                f"--workers {args.workers} at least {floor:.2f} s of wall (the parent's own "
                f"{many['own_cpu']:.2f} s, or {many['cpu']:.2f} s over the cores): at most "
                f"{one['cpu'] / floor:.2f}x one process"
            )
            per_trace = one["wall"] / traces
            print(
                f"  ratio: {per_trace * 1000:.2f} ms per trace: {run_s / per_trace:.0f}x faster than "
                f"re-running the agent at 50 ms per model call ({bare_s / per_trace:.1f}x with an "
                f"instant model); grade-traces takes {one['wall'] / parse_s:.1f}x the parse alone "
                f"({one['cpu'] / parse_cpu:.1f}x in CPU), {many['wall'] / parse_s:.1f}x with "
                f"--workers {args.workers}, which is {one['wall'] / many['wall']:.2f}x one "
                f"process by wall (medians of {args.rounds} round(s))"
            )
            rates = (spans / parse_s, size / parse_s)
            table.append((size, traces, *rates, parse_s, parse_cpu, one, many))
            shutil.rmtree(archive.parent.parent, ignore_errors=True)
        print_table(table, args.workers)


def print_table(rows: list[tuple], workers: int) -> None:
    """The sizes side by side: the parse rate, grade-traces' time in one process and with
    `workers`, their ratio to the parse, the peaks."""
    print("\nside by side (goal: the same peak RSS for every size, at most 200 MB)")
    print(
        f"  {'archive':>9}  {'traces':>7}  {'parse spans/s':>13}  {'parse MB/s':>10}  "
        f"{'1 process s':>11}  {'(CPU s)':>8}  {f'{workers} workers s':>11}  {'(CPU s)':>8}  "
        f"{'1/parse':>7}  {f'{workers}/parse':>7}  {'peak MB 1':>9}  {f'peak MB {workers}':>9}"
    )
    for size, traces, spans_rate, mb_rate, parse_s, _parse_cpu, one, many in rows:
        print(
            f"  {size:7.0f}MB  {traces:7d}  {spans_rate:13.0f}  {mb_rate:10.1f}  "
            f"{one['wall']:11.2f}  {one['cpu']:8.2f}  {many['wall']:11.2f}  {many['cpu']:8.2f}  "
            f"{one['wall'] / parse_s:6.1f}x  {many['wall'] / parse_s:6.1f}x  "
            f"{one['tree_peak']:9.0f}  {many['tree_peak']:9.0f}"
        )
    peaks = [row[6]["tree_peak"] for row in rows]
    if len(peaks) > 1:
        print(
            f"  peak RSS from {peaks[0]:.0f} to {peaks[-1]:.0f} MB "
            f"({peaks[-1] - peaks[0]:+.0f} MB) over a {rows[-1][0] / rows[0][0]:.0f}x larger archive"
        )


if __name__ == "__main__":
    main_bench()
