"""Benchmark: tool_usage_grader over 10,000 records of 20 calls with 4 expectations each
(`args` and `after` included), and trajectory_grader over 10,000 records of 10 calls with 5
expected calls in `unordered` mode (argument matchers included). Target for both: at least
10,000 gradings per second.

Prints gradings per second next to a baseline (a trivial loop touching every call of the same
records once), and the ratio of the two; then the cost of a trajectory of 25 expected calls
against 50 calls (the assignment must stay polynomial), measured beside the 10-call case. The
trajectory figures are CPU time of this process (`time.process_time`), so a machine shared with
other work does not halve them.

    .venv/bin/python bench/graders.py [--records N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and its name would shadow the
# `graders` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from tracegrade.graders.context import build_context  # noqa: E402
from tracegrade.graders.tool_usage import ToolUsageGrader  # noqa: E402
from tracegrade.graders.trajectory.grader import TrajectoryGrader  # noqa: E402
from tracegrade.records import Outcome, ToolCall, ToolRecord  # noqa: E402

TOOLS = [
    "search",
    "get_ticket",
    "update_ticket",
    "list_users",
    "get_user",
    "close_ticket",
    "add_note",
    "notify",
]
EXPECTED = [
    {"tool": "search", "should_run": True, "args": {"query": "refund"}},
    {"tool": "update_ticket", "should_run": True, "after": "get_ticket"},
    {"tool": "get_user", "should_run": True, "args": {"id": 7}},
    {"tool": "delete_ticket", "should_run": False},
]


def trajectory_case(rng: random.Random, calls: int, expected: int) -> tuple[ToolRecord, dict]:
    """A record of `calls` calls (two parallel per model turn) and an `unordered` trajectory of
    `expected` calls drawn from it, with matchers: a literal, a regex, an `in`, a range."""
    record = make_record(rng, calls)
    picked = rng.sample(list(record), expected)
    expected_calls = []
    for n, c in enumerate(picked):
        args: dict = {
            "query": c.arguments["query"]
            if n % 4 == 0
            else {"regex": c.arguments["query"][:3] + ".*"}
            if n % 4 == 1
            else {"in": ["refund", "invoice"]}
        }
        if n % 2:
            args["id"] = {"min": 1, "max": 9}
        expected_calls.append({"tool": c.name, "args": args})
    return record, {"match": "unordered", "calls": expected_calls}


def make_record(rng: random.Random, calls: int = 20) -> ToolRecord:
    made = []
    for seq in range(calls):
        name = rng.choice(TOOLS)
        agent = "desk" if seq % 5 else "research"
        made.append(
            ToolCall(
                seq=seq,
                name=name,
                qualified_id=f"{agent}:{name}",
                call_id=f"c{seq}",
                arguments={"query": rng.choice(["refund", "invoice"]), "id": rng.randint(1, 9)},
                outcome=Outcome.OK,
                agent=agent,
                depth=0 if agent == "desk" else 1,
                model_turn=seq // 2,
                index_in_turn=seq % 2,
                start_ns=seq * 100,
                end_ns=seq * 100 + 50,
            )
        )
    return ToolRecord(made)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="passes; the best is reported")
    options = parser.parse_args()
    rng = random.Random(7)
    contexts = [
        build_context(
            {"id": f"q{i}", "expected_tools": EXPECTED}, messages=[], tool_calls=make_record(rng)
        )
        for i in range(options.records)
    ]
    grader = ToolUsageGrader()

    def baseline_pass() -> float:
        start = time.perf_counter()
        touched = 0
        for context in contexts:
            for call in context["tool_calls"]:
                touched += call.name == "search"
        return time.perf_counter() - start

    def grading_pass() -> float:
        start = time.perf_counter()
        for context in contexts:
            grader.grade("", "", context)
        return time.perf_counter() - start

    baseline = min(baseline_pass() for _ in range(options.repeat))
    elapsed = min(grading_pass() for _ in range(options.repeat))
    total = sum(grader.grade("", "", context).score for context in contexts)

    rate, base_rate = options.records / elapsed, options.records / baseline
    print(
        f"records: {options.records} x 20 calls, 4 expectations (args and after included); "
        f"best of {options.repeat} passes"
    )
    print(
        f"tool_usage_grader: {rate:12,.0f} gradings/s  ({elapsed * 1e6 / options.records:.1f} "
        f"us each, mean score {total / options.records:.2f})"
    )
    print(
        f"baseline loop:     {base_rate:12,.0f} records/s   ({baseline * 1e6 / options.records:.1f}"
        f" us each, touching every call once)"
    )
    print(
        f"ratio grader/baseline time: {elapsed / baseline:.1f}x   target >= 10,000 gradings/s: "
        f"{'met' if rate >= 10_000 else 'NOT met'}"
    )

    trajectory_bench(options.records, options.repeat)


def trajectory_bench(records: int, repeat: int) -> None:
    rng = random.Random(11)
    grader = TrajectoryGrader()

    def contexts_for(n: int, calls: int, expected: int) -> list[dict]:
        out = []
        for i in range(n):
            record, trajectory = trajectory_case(rng, calls, expected)
            row = {"id": f"q{i}", "trajectory": trajectory}
            out.append(build_context(row, messages=[], tool_calls=record))
        return out

    def timed(contexts: list[dict]) -> float:
        start = time.process_time()
        for context in contexts:
            grader.grade("", "", context)
        return time.process_time() - start

    def baseline(contexts: list[dict]) -> float:
        start = time.process_time()
        touched = 0
        for context in contexts:
            for call in context["tool_calls"]:
                touched += call.name == "search"
        return time.process_time() - start

    small = contexts_for(records, 10, 5)
    large = contexts_for(max(records // 20, 50), 50, 25)
    small_s = min(timed(small) for _ in range(repeat))
    base_s = min(baseline(small) for _ in range(repeat))
    large_s = min(timed(large) for _ in range(repeat))
    scores = [grader.grade("", "", c).score for c in small]
    # Every expected call is drawn from its record, so each is met; in unordered mode the five
    # other calls break "no other calls": 5 of 6 constraints, 0.83 each.
    mean = sum(scores) / len(scores)
    rate = records / small_s
    small_us, large_us = small_s * 1e6 / records, large_s * 1e6 / len(large)
    print()
    print(
        f"records: {records} x 10 calls, 5 expected calls (unordered, matchers); best of {repeat}"
        " passes, CPU time"
    )
    print(
        f"trajectory_grader: {rate:12,.0f} gradings/s  ({small_us:.1f} us each, mean score "
        f"{mean:.2f})"
    )
    print(
        f"baseline loop:     {records / base_s:12,.0f} records/s   "
        f"({base_s * 1e6 / records:.1f} us each, touching every call once)"
    )
    print(
        f"ratio grader/baseline time: {small_s / base_s:.1f}x   target >= 10,000 gradings/s: "
        f"{'met' if rate >= 10_000 else 'NOT met'}"
    )
    print(
        f"50 calls x 25 expected: {large_us:.1f} us each ({len(large)} records), "
        f"{large_us / small_us:.1f}x the 10 x 5 case for 5x the calls and 5x the expectations"
    )


if __name__ == "__main__":
    main()
