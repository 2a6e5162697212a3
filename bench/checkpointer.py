"""What the per-question checkpointer costs where a question needs one: a graph compiled
without one gets LangGraph's `InMemorySaver` for each question run that may resume an
`interrupt()` or continue over turns (a question without `resume`, `turns` or `user` runs the graph
as compiled, at no cost), on the support desk's scripted agent (a read-only availability check:
one tool call, two model calls).

Modes, interleaved round by round so drift hits them alike:
- plain: `graph.ainvoke(inputs)` on the graph as compiled (no checkpointer);
- per-question saver: `with_checkpointer(graph, question)` for a question with `resume` (a copy with a fresh InMemorySaver) built and
  invoked once per run, as the runner does.

Run: `.venv/bin/python bench/checkpointer.py [--runs 300]`. Prints medians per run, the added
time, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.support_desk import build_graph
from tracegrade.execution.question.conversation import with_checkpointer

INPUTS = {"messages": [{"role": "user", "content": "Is 2026-12-03 at 10:00 still free?"}]}


class Resumable:
    """A question with a `resume:` script: the kind that gets the saver."""

    resume = ("yes",)
    user = None

    def user_turns(self) -> list:
        return []


async def main(runs: int) -> None:
    graph = build_graph()
    plain: list[float] = []
    saved: list[float] = []
    for i in range(runs):
        config = {"configurable": {"thread_id": f"t{i}"}}
        start = time.perf_counter()
        await graph.ainvoke(INPUTS, config)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        await with_checkpointer(graph, Resumable()).ainvoke(INPUTS, config)
        saved.append(time.perf_counter() - start)
    a, b = statistics.median(plain) * 1e3, statistics.median(saved) * 1e3
    print(f"plain graph           {a:7.2f} ms per run (median of {runs})")
    print(f"per-question saver    {b:7.2f} ms per run")
    print(f"added                 {b - a:7.2f} ms per question run ({b / a:.2f}x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    asyncio.run(main(parser.parse_args().runs))
