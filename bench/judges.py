"""Benchmark: what a judge grading costs through the loopback chat-completions server, against
the same grading served from the judge cache (a re-grade), and the TOOL CALLS rendering of a
200-call record. Prints gradings per second side by side and the ratio.

    .venv/bin/python bench/judges.py [--gradings N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path; the repo root must be there.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from tests.openai_server import OpenAIServer, score  # noqa: E402
from tracegrade.graders.base import GraderServices  # noqa: E402
from tracegrade.graders.judges import AccuracyGrader  # noqa: E402
from tracegrade.judging import JudgeCache, OpenAICompatibleProvider, render_tool_calls  # noqa: E402
from tracegrade.records import Outcome, ToolCall, ToolRecord  # noqa: E402


def record(n: int) -> ToolRecord:
    return ToolRecord(
        [
            ToolCall(
                seq=i,
                name=f"tool_{i % 25}",
                qualified_id=f"desk:tool_{i % 25}",
                call_id=f"c{i}",
                arguments={"id": str(i % 7), "query": "refund " * 20, "api_token": "x"},
                outcome=Outcome.OK,
            )
            for i in range(n)
        ]
    )


async def grade_all(grader: AccuracyGrader, n: int, context: dict) -> float:
    started = time.perf_counter()
    for i in range(n):
        result = await grader.agrade(f"question {i}", f"answer {i}", context)
        assert result.scored, result.reason
    return time.perf_counter() - started


async def main(gradings: int) -> None:
    server = OpenAIServer().start()
    server.default = score(4, "bench")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            provider = OpenAICompatibleProvider(base_url=server.base_url, model="bench")
            cache = JudgeCache(Path(tmp) / "cache.sqlite3")
            grader = AccuracyGrader(
                services=GraderServices(judge_provider=provider, judge_cache=cache)
            )
            context = {"criteria": "be right", "tool_calls": record(20)}
            cold = await grade_all(grader, gradings, context)
            calls = len(server.requests)
            warm = await grade_all(grader, gradings, context)
            assert len(server.requests) == calls, "a re-grade must make no calls"
    finally:
        server.stop()

    big = record(200)
    started = time.perf_counter()
    for _ in range(200):
        render_tool_calls(big)
    render_s = (time.perf_counter() - started) / 200

    print(f"gradings: {gradings} (accuracy_grader, 20-call record)")
    print(f"{'loopback provider':<24}{gradings / cold:>10.0f} gradings/s")
    print(f"{'judge cache (re-grade)':<24}{gradings / warm:>10.0f} gradings/s")
    print(f"{'ratio cache/provider':<24}{cold / warm:>10.1f}x")
    print(f"{'render 200-call record':<24}{render_s * 1e6:>10.0f} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gradings", type=int, default=300)
    asyncio.run(main(parser.parse_args().gradings))
