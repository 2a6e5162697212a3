"""Benchmark: how long a run takes to reach exit 3 when the judge server hangs (accepts
connections, never answers), with the circuit breaker (default 5 failures) and without it
(a threshold no run reaches), side by side in one process on the same project.

    .venv/bin/python bench/judge_outage.py [--questions 20] [--timeout 0.5] [--attempts 2]

Prints each mode's wall time, exit code and errored judge gradings, and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path; the repo root must be there.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from tests.openai_server import HangingServer  # noqa: E402
from tests.runs_support import write_project  # noqa: E402
from tracegrade.execution.run.lifecycle import start_run  # noqa: E402
from tracegrade.inputs.config import load_config  # noqa: E402

JUDGES = ["relevance_grader", "completeness_grader", "actionability_grader"]


def one_run(root: Path, server: HangingServer, args, breaker: int) -> tuple[float, int, int]:
    judge = {
        "provider": "openai-compatible",
        "base_url": server.base_url,
        "model": "m",
        "timeout_s": args.timeout,
        "max_attempts": args.attempts,
        "circuit_breaker_failures": breaker,
    }
    questions = [{"id": f"q{i:03d}", "input": "weather in Rome?"} for i in range(args.questions)]
    config = load_config(
        write_project(
            root,
            questions=[],
            extra_questions=questions,
            config={"judge": judge},
            target={"graders": JUDGES, "concurrency": 8},
        )
    )
    started = time.perf_counter()
    outcome = start_run(config)
    wall = time.perf_counter() - started
    errored = sum(1 for q in outcome.targets[0].questions for g in q.graders if g.error)
    return wall, outcome.exit_code, errored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=0.5)
    parser.add_argument("--attempts", type=int, default=2)
    args = parser.parse_args()
    server = HangingServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            on = one_run(Path(tmp) / "breaker", server, args, breaker=5)
            off = one_run(Path(tmp) / "no-breaker", server, args, breaker=1_000_000)
    finally:
        server.stop()
    gradings = args.questions * len(JUDGES)
    print(
        f"{args.questions} questions x {len(JUDGES)} judges = {gradings} gradings, "
        f"timeout_s {args.timeout:g}, max_attempts {args.attempts}, hanging server"
    )
    for name, (wall, code, errored) in (("breaker (5)", on), ("no breaker", off)):
        print(f"  {name:<12} {wall:7.2f} s  exit {code}  errored gradings {errored}/{gradings}")
    print(f"  the breaker reaches exit 3 {off[0] / on[0]:.1f}x sooner")


if __name__ == "__main__":
    main()
