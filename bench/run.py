"""Benchmark of `tracegrade run` on the support desk agent (agents/support_desk.py).

The scripted model sleeps `--latency` seconds per model call (default 50 ms), standing in for a
real model. For each concurrency (1, 10, 50) it prints, side by side:

- the harness: `harness.runs.start_run` (capture, grading, one SQLite commit per question, the
  local trace file), wall time, throughput as a share of the ideal
  (model calls x latency / concurrency), and its ratio to
- the raw agent: the same graphs invoked without tracegrade (plain asyncio.gather bounded by a
  semaphore, one environment per question, no callbacks, no grading).

Then the harness's own overhead per question (serial, latency 0: everything but the agent's
model latency, minus the raw agent's own CPU) and the peak Python heap (tracemalloc) of a run of
`--questions / 4` vs `--questions` questions, to show memory is flat in the number of questions.

    .venv/bin/python bench/run.py                 # 1,000 questions, 50 ms per model call
    .venv/bin/python bench/run.py --questions 200 --latency 0.02 --serial-questions 50   # quick
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.config import load_config  # noqa: E402
from harness.dataset import load_dataset  # noqa: E402
from harness.runs import Selection, start_run  # noqa: E402

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


def harness_run(path: Path) -> tuple[float, int]:
    config = load_config(path)
    started = time.perf_counter()
    outcome = start_run(config, Selection())
    wall = time.perf_counter() - started
    errored = sum(t.verdict.errored for t in outcome.targets)
    if errored:
        raise SystemExit(f"benchmark run errored on {errored} question(s)")
    return wall, len(outcome.targets[0].questions)


def raw_run(path: Path) -> tuple[float, int]:
    """The same agent without tracegrade: (wall seconds, model calls made)."""
    from harness.runner import messages_for_agent

    config = load_config(path)
    target = config.targets["support_desk"]
    factory = target.load_factory()
    make_env = target.load_environment_factory()
    questions = load_dataset(target.dataset).questions

    async def main() -> int:
        semaphore = asyncio.Semaphore(target.concurrency)

        async def one(question) -> int:
            async with semaphore:
                env = make_env()
                try:
                    graph = factory(environment=env)
                    messages = messages_for_agent(question.input_messages(), target.system_prompt)
                    state = await graph.ainvoke({"messages": messages})
                    return sum(1 for m in state["messages"] if m.type == "ai")
                finally:
                    env.close()

        return sum(await asyncio.gather(*(one(q) for q in questions)))

    started = time.perf_counter()
    calls = asyncio.run(main())
    return time.perf_counter() - started, calls


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
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tracegrade-bench-"))
    os.environ["TRACEGRADE_DEMO_LATENCY"] = str(args.latency)

    print(f"support desk agent, {args.latency * 1000:g} ms per model call, run dirs under {root}")
    header = f"{'conc':>4} {'questions':>9} {'ideal s':>8} {'harness s':>9} {'% ideal':>7} {'raw s':>7} {'% ideal':>7} {'harness/raw':>11}"
    print(header)
    for concurrency in args.concurrency:
        n = min(args.questions, args.serial_questions) if concurrency == 1 else args.questions
        path = write_project(root / f"c{concurrency}", n, concurrency)
        raw_wall, calls = raw_run(path)
        wall, done = harness_run(path)
        ideal = calls * args.latency / concurrency
        print(
            f"{concurrency:>4} {done:>9} {ideal:>8.2f} {wall:>9.2f} {100 * ideal / wall:>6.1f}% "
            f"{raw_wall:>7.2f} {100 * ideal / raw_wall:>6.1f}% {wall / raw_wall:>11.3f}"
        )

    # Overhead: serial, no model latency, so the difference is tracegrade's own work.
    os.environ["TRACEGRADE_DEMO_LATENCY"] = "0"
    n = min(args.questions, max(args.serial_questions, 200))
    path = write_project(root / "overhead", n, 1)
    raw_run(path)  # warm imports and caches
    harness_run(path)
    # Alternate the two, best of three each: one-off noise (the other core busy, a GC pause)
    # would otherwise swamp a difference of a few ms per question.
    raws, walls = [], []
    for _ in range(3):
        raws.append(raw_run(path)[0])
        walls.append(harness_run(path)[0])
    raw_wall, wall = min(raws), min(walls)
    started = time.perf_counter()
    load_dataset(load_config(path).targets["support_desk"].dataset)
    load_s = time.perf_counter() - started
    per = 1000 / n
    print(
        f"\noverhead (concurrency 1, latency 0, {n} questions): raw agent {raw_wall * per:.2f} ms/question, "
        f"harness {wall * per:.2f} ms/question -> tracegrade's own {(wall - raw_wall) * per:.2f} ms/question "
        f"(of which loading and validating the dataset file {load_s * per:.2f} ms/question)"
    )

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
