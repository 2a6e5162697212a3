"""Every row of the performance table in one command, each beside its reference and its goal.

Each row runs its own benchmark in a process of its own (so one row's memory and imports do not
weigh on the next) and prints that benchmark's side-by-side lines under a header naming the row,
its reference and its goal:

- overhead: tracegrade's own CPU per question, by part, interleaved with the raw agent
  (`run.py --parts overhead`); goal at most 0.2x the raw agent;
- throughput: `run` at concurrency 50, 810 questions, 50 ms per model call, with 1 and 2
  workers beside the raw agent (`run.py --parts throughput`); goal 1 worker >= 0.9x, 2 >= 1.5x;
- HTML report of a 5,000-question run (`html_report.py`); goal under 2 s;
- grade-traces: time and peak RSS for two archive sizes, one process and `--workers 2`,
  beside the parse alone (`traces.py`);
  goal flat memory <= 200 MB, half the time;
- receive with grading beside the parse alone and the raw agent (`receive.py`).

The machine these run on is often shared: every row is measured side by side in one process
run, so its ratio survives the load while its absolute figures do not. Run a row twice and
report the range.

    .venv/bin/python bench/table.py                       # every row (many minutes)
    .venv/bin/python bench/table.py --rows overhead throughput
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

ROWS: dict[str, tuple[str, list[str]]] = {
    "overhead": (
        "tracegrade's own CPU per question vs the raw agent (goal <= 0.2x, by part)",
        ["run.py", "--parts", "overhead"],
    ),
    "throughput": (
        "run, concurrency 50, 810 questions, 50 ms/call vs the raw agent "
        "(goal 1 worker >= 0.9x, 2 workers >= 1.5x)",
        [
            "run.py",
            "--parts",
            "throughput",
            "--concurrency",
            "50",
            "--questions",
            "810",
            "--executors",
            "1",
            "2",
        ],
    ),
    "html": (
        "HTML report of a 5,000-question run (goal < 2 s, <= 0.3 ms/question)",
        ["html_report.py", "--questions", "5000"],
    ),
    "grade-traces": (
        "grade-traces time and peak RSS, one process and --workers 2, vs the parse alone "
        "(goal flat memory <= 200 MB, half the time)",
        ["traces.py", "--mb", "100", "1000"],
    ),
    "receive": (
        "receive with grading vs the parse alone and the raw agent (goal >= 1.7x one process "
        "with 2 workers)",
        ["receive.py"],
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    args = parser.parse_args()
    failed = 0
    for name in args.rows:
        title, command = ROWS[name]
        print(f"\n=== {name}: {title}", flush=True)
        started = time.monotonic()
        done = subprocess.run([sys.executable, str(BENCH / command[0]), *command[1:]])
        print(f"=== {name}: {time.monotonic() - started:.0f} s, exit {done.returncode}", flush=True)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
