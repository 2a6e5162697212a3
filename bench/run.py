"""Benchmark of `tracegrade run` on the support desk agent (agents/support_desk.py).

The scripted model sleeps `--latency` seconds per model call (default 50 ms), standing in for a
real model. For each concurrency (1, 10, 50) it prints, side by side:

- the harness: `tracegrade.execution.run.lifecycle.start_run` (capture, grading, one SQLite commit per question, the
  local trace file), wall time, throughput as a share of the ideal
  (model calls x latency / concurrency), and its ratio to
- the raw agent: the same graphs invoked without tracegrade (plain asyncio.gather bounded by a
  semaphore, one environment per question, no callbacks, no grading), in one process;
- tracegrade with 1 worker (the run's own process), 2 worker processes (`--workers 2`) and 2
  Ray actors on a local Ray with 2 CPUs (`--executor ray`), each with its throughput relative
  to the raw agent's (`--executors` picks the columns).

Then tracegrade's own CPU per question (serial, latency 0), the raw agent and the runner's
per-question path interleaved question by question so this shared machine's drift cancels (see
`overhead`), redaction's share of it (the same per-question path with the run's redaction policy
and with a pass-through one, interleaved; see `redaction`), and the peak Python heap
(tracemalloc) of a run of `--questions / 4` vs `--questions` questions, to show memory is flat
in the number of questions.

    .venv/bin/python bench/run.py                 # 1,000 questions, 50 ms per model call
    .venv/bin/python bench/run.py --questions 200 --latency 0.02 --serial-questions 50   # quick
    .venv/bin/python bench/run.py --parts overhead                                       # one part
    .venv/bin/python bench/run.py --parts redaction                       # redaction's cost
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from contextlib import ExitStack
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.overhead_parts import Timers, instrumented  # noqa: E402
from tracegrade.execution.run.lifecycle import start_run  # noqa: E402
from tracegrade.inputs.config import load_config  # noqa: E402
from tracegrade.inputs.dataset import load_dataset  # noqa: E402
from tracegrade.rundir.outcome import Selection  # noqa: E402

SOURCE = REPO / "examples" / "datasets" / "support_desk.yaml"
GRADERS = [
    {"id": "tool_usage_grader", "must_pass": True, "threshold": 5},
    {"id": "state_grader", "must_pass": True},
    "format_grader",
]


def write_project(root: Path, questions: int, concurrency: int) -> Path:
    """A dataset of `questions` rows cycling through the support desk questions, and a config."""
    rows = yaml.safe_load(SOURCE.read_text())["questions"]
    out = []
    for i in range(questions):
        row = dict(rows[i % len(rows)])
        row["id"] = f"{row['id']}-{i}"
        row.pop("rubric_ref", None)
        out.append(row)
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "bench.yaml").write_text(yaml.safe_dump({"questions": out}, sort_keys=False))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "support_desk": {
                "agent": str(REPO / "agents" / "support_desk.py") + ":build_graph",
                "environment": str(REPO / "agents" / "support_desk.py") + ":make_environment",
                "dataset": "data/bench.yaml",
                "system_prompt": "You are the support desk. Follow the support policy exactly.",
                "concurrency": concurrency,
                "timeout_s": 600,
                "graders": GRADERS,
            }
        },
    }
    path = root / f"tracegrade-{questions}-{concurrency}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def harness_run(
    path: Path, clock=time.perf_counter, *, workers: int = 1, executor: str = "local"
) -> tuple[float, int]:
    """`tracegrade run` as the library runs it: (seconds on `clock`, questions run). Loading
    and validating the dataset file is inside the clock, and so is starting the worker
    processes or Ray actors."""
    config = load_config(path)
    started = clock()
    outcome = start_run(config, Selection(), workers=workers, executor=executor)
    wall = clock() - started
    errored = sum(t.verdict.errored for t in outcome.targets)
    if errored:
        raise SystemExit(f"benchmark run errored on {errored} question(s)")
    return wall, len(outcome.targets[0].questions)


async def raw_question(target, factory, make_env, question, *, callbacks=None) -> int:
    """One question through the agent as a plain loop would: a fresh environment, the graph
    built on it, `ainvoke` with no callbacks (or `callbacks`). Returns the model calls it made."""
    from tracegrade.execution.question.runner import messages_for_agent

    env = make_env()
    try:
        graph = factory(environment=env)
        messages = messages_for_agent(question.input_messages(), target.system_prompt)
        config = {"callbacks": callbacks} if callbacks else None
        state = await graph.ainvoke({"messages": messages}, config=config)
        return sum(1 for m in state["messages"] if m.type == "ai")
    finally:
        env.close()


def raw_run(path: Path, clock=time.perf_counter) -> tuple[float, int]:
    """The same agent without tracegrade: (seconds on `clock`, model calls made). Its questions
    are loaded before the clock starts: a plain loop has its inputs in memory already, so
    validating the dataset file is counted as tracegrade's work, not the agent's."""
    config = load_config(path)
    target = config.targets["support_desk"]
    factory = target.load_factory()
    make_env = target.load_environment_factory()
    questions = load_dataset(target.dataset).questions

    async def main() -> int:
        semaphore = asyncio.Semaphore(target.concurrency)

        async def one(question) -> int:
            async with semaphore:
                return await raw_question(target, factory, make_env, question)

        return sum(await asyncio.gather(*(one(q) for q in questions)))

    started = clock()
    calls = asyncio.run(main())
    return clock() - started, calls


def peak_heap(path: Path) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        start_run(load_config(path), Selection())
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument(
        "--serial-questions",
        type=int,
        default=100,
        help="questions at concurrency 1 (the serial run is slow; give --questions for all)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="alternating runs per concurrency (medians)"
    )
    parser.add_argument(
        "--overhead-questions",
        type=int,
        default=300,
        help="questions interleaved with the raw agent for the overhead (serial, latency 0)",
    )
    parser.add_argument(
        "--pairs", type=int, default=7, help="one-question runs for the per-run setup (x2)"
    )
    parser.add_argument(
        "--executors",
        nargs="+",
        default=["1", "2", "ray"],
        help="tracegrade columns beside the raw agent: worker counts, and `ray` (2 Ray actors "
        "on a local Ray with 2 CPUs, started once before the timed runs)",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=["throughput", "overhead", "redaction", "memory"],
        default=["throughput", "overhead", "redaction", "memory"],
        help="which measurements to run (default: all)",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tracegrade-bench-"))
    os.environ["TRACEGRADE_DEMO_LATENCY"] = str(args.latency)

    print(f"support desk agent, {args.latency * 1000:g} ms per model call, run dirs under {root}")
    if "throughput" in args.parts:
        throughput(args, root)
    if "overhead" in args.parts:
        overhead(args, root)
    if "redaction" in args.parts:
        redaction(args, root)
    if "memory" in args.parts:
        memory(args, root)


def executor_runs(args: argparse.Namespace) -> dict:
    """The runs compared side by side: the raw agent in one process, then tracegrade as each
    `--executors` entry asks (1 and 2 worker processes, a local Ray with 2 CPUs)."""
    runs = {"raw agent": raw_run}
    for name in args.executors:
        if name == "ray":
            try:
                from tracegrade.execution.executors.ray_executor import connect_ray

                connect_ray(None, 2)  # started once, before any timed run
            except Exception as exc:  # reported; the other columns still run
                print(f"(no Ray column: {exc})")
                continue
            runs["ray 2 CPUs"] = functools.partial(harness_run, workers=2, executor="ray")
        else:
            workers = int(name)
            label = f"{workers} worker" + ("s" if workers > 1 else "")
            runs[label] = functools.partial(harness_run, workers=workers)
    return runs


def throughput(args: argparse.Namespace, root: Path) -> None:
    """Wall time of whole runs, the raw agent and tracegrade's executors alternating (the order
    rotated each repeat, so drift of this shared machine falls on all): medians of `--repeats`
    runs each, and each one's throughput relative to the raw agent's (raw wall / its wall)."""
    runs = executor_runs(args)
    print(f"medians of {args.repeats} alternating runs each; x raw = raw agent wall / wall")
    names = list(runs)
    header = f"{'conc':>4} {'questions':>9} {'ideal s':>8} " + " ".join(
        f"{name + ' s':>14} {'% ideal':>7} {'x raw':>6}" for name in names
    )
    print(header)
    for concurrency in args.concurrency:
        n = min(args.questions, args.serial_questions) if concurrency == 1 else args.questions
        path = write_project(root / f"c{concurrency}", n, concurrency)
        walls: dict[str, list[float]] = {name: [] for name in names}
        calls = done = 0
        for i in range(args.repeats):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                gc.collect()
                wall, count = runs[name](path)
                walls[name].append(wall)
                if name == "raw agent":
                    calls = count
                else:
                    done = count
        ideal = calls * args.latency / concurrency
        raw = statistics.median(walls["raw agent"])
        cells = []
        for name in names:
            wall = statistics.median(walls[name])
            cells.append(f"{wall:>14.2f} {100 * ideal / wall:>6.1f}% {raw / wall:>6.2f}")
        print(f"{concurrency:>4} {done or n:>9} {ideal:>8.2f} " + " ".join(cells))


def _thread_cpu(name_prefix: str) -> float:
    """CPU seconds used so far by the live threads whose name starts with `name_prefix`."""
    return sum(
        time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        for t in threading.enumerate()
        if t.name.startswith(name_prefix) and t.ident is not None
    )


def _trimmed(diffs: list[float]) -> tuple[float, float]:
    """The 5%-trimmed mean of paired differences and its spread (standard error)."""
    ordered = sorted(diffs)
    cut = len(ordered) // 20
    trimmed = ordered[cut : len(ordered) - cut] if cut else ordered
    spread = statistics.stdev(trimmed) / len(trimmed) ** 0.5 if len(trimmed) > 1 else 0.0
    return statistics.fmean(trimmed), spread


def overhead(args: argparse.Namespace, root: Path) -> None:
    """tracegrade's own CPU per question, serial and with no model latency.

    This machine is shared and its speed drifts by tens of percent within seconds, more than
    the figure measured, so whole runs side by side cannot resolve it. Instead one process
    interleaves them, question by question (the order rotated each time): the raw agent (build
    the graph on a fresh environment, `ainvoke`), the same with a callback handler that handles
    nothing (LangChain's dispatch alone: what any capture by callbacks pays, printed as the
    floor) and the runner's own per-question path (the same agent under the recorder, grading,
    the SQLite commit: what `start_run` does for each question), each timed on the main
    thread's CPU clock. Drift hits them alike; the mean of
    the paired differences is the per-question cost. Added to it, measured apart: the trace
    file writer's thread CPU, loading and validating the dataset file, and the per-run setup.
    """
    from langchain_core.callbacks import BaseCallbackHandler

    from tracegrade.capture.recorder import Recorder
    from tracegrade.capture.telemetry import RunTelemetry
    from tracegrade.execution.question import runner
    from tracegrade.execution.question.grading import attach_graders
    from tracegrade.execution.question.runner import _run_one
    from tracegrade.execution.run.prepare import plan_of as _plan
    from tracegrade.execution.run.prepare import select as _select
    from tracegrade.execution.run.prepared import RunSettings
    from tracegrade.execution.run.services import run_services
    from tracegrade.inputs import sourcefile
    from tracegrade.rundir.store import ResultStore

    os.environ["TRACEGRADE_DEMO_LATENCY"] = "0"
    n = args.overhead_questions
    path = write_project(root / "overhead", n, 1)
    config = load_config(path)
    target = config.targets["support_desk"]
    run_dir = root / "overhead" / "interleaved"
    services = run_services(RunSettings.of(config), run_dir, True)
    dataset, questions = _select(target, Selection())
    attached = attach_graders(target.graders, grading_module=None, services=services)
    plan = _plan(target, questions, dataset, attached, services)
    factory, make_env = plan.factory, plan.environment_factory

    # Loading the dataset, as a run does it first thing (small heap): once with the compiled
    # schema cleared (each process compiles it once: a per-run cost), then warm.
    sourcefile._compiled.cache_clear()
    gc.collect()
    started = time.process_time()
    load_dataset(target.dataset)
    cold = time.process_time() - started
    gc.collect()
    started = time.process_time()
    load_dataset(target.dataset)
    loading = (time.process_time() - started) / n
    compile_once = max(0.0, cold - loading * n)

    async def raw_one(question) -> None:
        await raw_question(target, factory, make_env, question)

    class NoOpHandler(BaseCallbackHandler):
        """Handles nothing: what LangChain's callback dispatch costs any handler, the floor
        of a capture by callbacks (called inline, as the recorder is)."""

        run_inline = True

    async def noop_one(question) -> None:
        await raw_question(target, factory, make_env, question, callbacks=[NoOpHandler()])

    async def interleave(
        store: ResultStore, grading_id: int, tracer, record_class=Recorder
    ) -> tuple[list, list, list]:
        async def ours(question) -> None:
            result = await _run_one(
                plan, question, tracer=tracer, shared=None, record_class=record_class
            )
            store.commit_question(result, grading_id=grading_id)

        raws, noops, harness = [], [], []
        runner._batched.set(True)  # the work folders handed over in batches, as in a run
        three = [(raw_one, raws), (noop_one, noops), (ours, harness)]
        for i, question in enumerate(questions):
            for fn, out in three[i % 3 :] + three[: i % 3]:  # each first, second, third in turn
                started = time.thread_time()
                await fn(question)
                out.append(time.thread_time() - started)
        runner._removals_done()  # the last batch's removals, counted on their thread
        return raws, noops, harness

    telemetry = RunTelemetry(trace_file=run_dir / "traces.jsonl")
    with ResultStore.in_run_dir(run_dir) as store:
        grading_id = store.new_grading(mode="run")
        asyncio.run(interleave(store, grading_id, telemetry.tracer))  # warm-up pass
        writer_before = _thread_cpu("OtelBatch")
        folders_before = _thread_cpu("tracegrade-workdir")
        gc.collect()
        raws, noops, harness = asyncio.run(interleave(store, grading_id, telemetry.tracer))
        telemetry.flush()
        writer = (_thread_cpu("OtelBatch") - writer_before) / n
        # the work folders are made and removed off the event loop, on threads of their own
        folders = (_thread_cpu("tracegrade-workdir") - folders_before) / n
        timers = Timers()
        with ExitStack() as stack:  # a pass apart: the timers cost CPU of their own
            timed_recorder = instrumented(stack, timers)
            gc.collect()
            asyncio.run(interleave(store, grading_id, telemetry.tracer, timed_recorder))
    telemetry.shutdown()
    diffs = [h - r for h, r in zip(harness, raws, strict=True)]
    main_thread = statistics.fmean(diffs)
    spread = statistics.stdev(diffs) / len(diffs) ** 0.5
    # A few pairs differ by +/-100 ms (a garbage collection or the machine taking the core
    # mid-question, on either side), and they set the mean's spread; the 5%-trimmed mean of
    # the same pairs is printed beside it as the cross-check (the verdict stays on the mean).
    trimmed_mean, trimmed_spread = _trimmed(diffs)

    single = write_project(root / "setup", 1, 1)
    setups = []
    for _ in range(2 * args.pairs):  # a one-question run, raw and harness: the per-run setup
        gc.collect()
        raw_s = raw_run(single, time.process_time)[0]
        gc.collect()
        setups.append(harness_run(single, time.process_time)[0] - raw_s)
    setup = statistics.median(setups) + compile_once
    per_question = main_thread + writer + folders + loading
    print(
        f"\noverhead (concurrency 1, latency 0, {n} questions interleaved with the raw agent, "
        f"CPU time):\n"
        f"  raw agent {statistics.fmean(raws) * 1000:.2f} ms/question, tracegrade's per-question "
        f"path {statistics.fmean(harness) * 1000:.2f} ms/question (main thread)\n"
        f"  tracegrade's own: {main_thread * 1000:.2f} ms capture, grading and commit "
        f"(+/- {spread * 1000:.2f}; 5%-trimmed {trimmed_mean * 1000:.2f} +/- "
        f"{trimmed_spread * 1000:.2f}) + {writer * 1000:.2f} ms trace file writer thread + "
        f"{folders * 1000:.2f} ms work folder threads + "
        f"{loading * 1000:.2f} ms loading and validating the dataset file = "
        f"{per_question * 1000:.2f} ms/question\n"
        f"  plus {setup * 1000:.0f} ms per run (config, run directory, identity, store, "
        f"telemetry, compiling the dataset schema): "
        f"{(per_question + setup / 1000) * 1000:.2f} ms/question at 1,000 questions"
    )
    raw_mean = statistics.fmean(raws)
    parts = {name: spent / n for name, spent in timers.corrected().items()}
    rest = main_thread - sum(v for k, v in parts.items() if k != "workdir")  # workdir: own thread
    print(
        f"  by part (a timed pass apart), ms/question and x the raw agent's "
        f"{raw_mean * 1000:.2f} ms:"
    )
    rows = [*parts.items(), ("trace file writer", writer), ("dataset loading", loading)]
    for name, spent in rows:
        print(f"    {name:<42} {spent * 1000:6.3f} ms  {spent / raw_mean:5.3f}x")
    name = "callback dispatch, runner glue (the rest)"
    if rest > 0:
        print(f"    {name:<42} {rest * 1000:6.3f} ms  {rest / raw_mean:5.3f}x")
    else:  # the two passes drifted apart by more than the rest
        print(f"    {name:<42} within the noise ({rest * 1000:.3f} ms)")
    total = per_question + setup / 1000
    robust = total - main_thread + trimmed_mean
    floors = [noop - raw for noop, raw in zip(noops, raws, strict=True)]
    floor = _trimmed(floors)[0]
    print(
        f"  of which LangChain's callback dispatch alone (the same agent with a no-op inline "
        f"handler, interleaved; 5%-trimmed mean, +/- "
        f"{statistics.stdev(floors) / len(floors) ** 0.5 * 1000:.2f} ms untrimmed): "
        f"{floor * 1000:.2f} ms = {floor / raw_mean:.3f}x; tracegrade beyond it "
        f"{(robust - floor) * 1000:.2f} ms = {(robust - floor) / raw_mean:.3f}x"
    )
    verdict = "meets" if total <= 0.2 * raw_mean else "misses"
    print(
        f"  own CPU {total * 1000:.2f} ms/question = {total / raw_mean:.2f}x the raw agent "
        f"(goal <= 0.2x: {verdict}); with the trimmed mean {robust * 1000:.2f} ms = "
        f"{robust / raw_mean:.2f}x"
    )


def redaction(args: argparse.Namespace, root: Path) -> None:
    """Redaction's CPU per question: the runner's per-question path (agent under the recorder,
    grading, the SQLite commit, which redacts every row) with the run's policy and with a
    pass-through one, interleaved question by question (order swapped each time) so the
    machine's drift hits both alike. The paired difference is as noisy as the figure is small,
    so the CPU spent inside the policy's own calls on that same path is added up too (the
    figure reported); plus the trace file's encoding of the same question's spans with either
    policy (the writer thread's share), timed apart on the captured spans."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracegrade.capture.recorder import Recorder
    from tracegrade.capture.telemetry import RunTelemetry
    from tracegrade.capture.tracefile import encode_line
    from tracegrade.execution.question.grading import attach_graders
    from tracegrade.execution.question.runner import _run_one
    from tracegrade.execution.run.prepare import plan_of as _plan
    from tracegrade.execution.run.prepare import select as _select
    from tracegrade.execution.run.prepared import RunSettings
    from tracegrade.execution.run.services import run_services
    from tracegrade.redaction import RedactionPolicy
    from tracegrade.rundir.store import ResultStore

    class PassThrough(RedactionPolicy):
        """Redacts nothing: the baseline the real policy is measured against."""

        def text(self, text):
            return text

        def value(self, value, *, name="", by_name=True):
            return value

        def answer(self, text):
            return text

        def mentions_secret_name(self, text):
            return False

    spent = [0.0]  # CPU inside the policy's top-level calls (nested ones are not re-counted)
    inside = threading.local()

    def timed(method):
        def wrapper(self, *args, **kwargs):
            if getattr(inside, "on", False):
                return method(self, *args, **kwargs)
            inside.on = True
            started = time.thread_time()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.thread_time() - started
                inside.on = False

        return wrapper

    class Counted(RedactionPolicy):
        """The run's policy, adding up the CPU its calls take."""

    for method in ("text", "value", "answer", "arguments", "spans", "is_secret_name"):
        setattr(Counted, method, timed(getattr(RedactionPolicy, method)))

    os.environ["TRACEGRADE_DEMO_LATENCY"] = "0"
    n = args.overhead_questions
    path = write_project(root / "redaction", n, 1)
    config = load_config(path)
    target = config.targets["support_desk"]
    dataset, questions = _select(target, Selection())
    counted = Counted(**{f: getattr(config.redaction, f) for f in ("names", "patterns", "allow")})
    plans, stores, tracers = {}, {}, {}
    spans = InMemorySpanExporter()
    telemetries = []
    for name, policy in (("redacted", counted), ("plain", PassThrough())):
        run_dir = root / "redaction" / name
        services = run_services(RunSettings.of(config), run_dir, True)
        services.redaction = policy
        attached = attach_graders(target.graders, grading_module=None, services=services)
        plans[name] = _plan(target, questions, dataset, attached, services)
        stores[name] = ResultStore.in_run_dir(run_dir, redaction=policy)
        telemetry = RunTelemetry(trace_file=None)
        if name == "redacted":
            telemetry._provider.add_span_processor(SimpleSpanProcessor(spans))
        telemetries.append(telemetry)
        tracers[name] = telemetry.tracer
    gradings = {name: store.new_grading(mode="run") for name, store in stores.items()}

    async def one(name: str, question) -> None:
        result = await _run_one(
            plans[name], question, tracer=tracers[name], shared=None, record_class=Recorder
        )
        stores[name].commit_question(result, grading_id=gradings[name])

    async def interleave() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {"redacted": [], "plain": []}
        for i, question in enumerate(questions):
            for name in ("redacted", "plain")[:: 1 if i % 2 else -1]:
                started = time.thread_time()
                await one(name, question)
                times[name].append(time.thread_time() - started)
        return times

    asyncio.run(interleave())  # warm-up pass
    spans.clear()
    gc.collect()
    spent[0] = 0.0
    times = asyncio.run(interleave())
    direct = spent[0] / n
    for telemetry in telemetries:
        telemetry.shutdown()
    for store in stores.values():
        store.close()
    diffs = [r - p for r, p in zip(times["redacted"], times["plain"], strict=True)]
    path_cost = statistics.fmean(diffs)
    spread = statistics.stdev(diffs) / len(diffs) ** 0.5
    finished = spans.get_finished_spans()
    encode = {}
    for name, policy in (("redacted", config.redaction), ("plain", PassThrough())):
        encode_line(finished, policy=policy)  # warm
        started = time.process_time()
        for _ in range(5):
            encode_line(finished, policy=policy)
        encode[name] = (time.process_time() - started) / 5 / n
    trace_cost = encode["redacted"] - encode["plain"]
    total = direct + trace_cost
    plain = statistics.fmean(times["plain"])
    print(
        f"\nredaction (concurrency 1, latency 0, {n} questions interleaved with and without it, "
        f"CPU time):\n"
        f"  per-question path {plain * 1000:.2f} ms without, "
        f"{statistics.fmean(times['redacted']) * 1000:.2f} ms with: paired difference "
        f"{path_cost * 1000:.3f} ms (+/- {spread * 1000:.3f}); inside the policy's calls "
        f"{direct * 1000:.3f} ms (store rows, grading)\n"
        f"  trace file encoding {encode['plain'] * 1000:.3f} ms without, "
        f"{encode['redacted'] * 1000:.3f} ms with: {trace_cost * 1000:.3f} ms\n"
        f"  redaction costs {total * 1000:.3f} ms/question "
        f"({total / plain * 100:.1f}% of the per-question path; policy calls + trace file)"
    )


def memory(args: argparse.Namespace, root: Path) -> None:
    small = max(1, args.questions // 4)
    heaps = []
    for count in (small, args.questions):
        path = write_project(root / f"mem{count}", count, 50)
        dataset = load_config(path).targets["support_desk"].dataset
        gc.collect()
        tracemalloc.start()
        load_dataset(dataset)
        loading = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        heaps.append((count, peak_heap(path), loading))
    (a, ha, la), (b, hb, lb) = heaps
    print(
        f"peak Python heap (tracemalloc, concurrency 50, latency 0): {a} questions {ha:.1f} MiB, "
        f"{b} questions {hb:.1f} MiB (ratio {hb / ha:.2f} for {b / a:.0f}x the questions); "
        f"loading the dataset file alone peaks at {la:.1f} / {lb:.1f} MiB"
    )


if __name__ == "__main__":
    main()
