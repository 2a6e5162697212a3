"""What the cost and latency accounting costs, beside the raw agent, in one process.

The agent: the scripted model/tools loop of bench/capture.py (3 tool calls in 3 turns, then an
answer: 4 model calls per run), its model reporting usage as a provider does. Modes,
interleaved round by round so drift and the neighbours' load hit them alike:

- raw agent: `graph.invoke(inputs)`, no tracegrade at all;
- recorder: tracegrade's `Recorder` (question span, `seal()`, the local trace file), which
  since the accounting also keeps each model call's usage and latency;
- recorder + accounting: the same, plus what the runner adds per question: the calls folded
  per model and priced (`tracegrade.execution.question.runner.account`: tool latencies from the record,
  the price table lookup, the JSON the store keeps) and read back as the record's typed
  `QuestionUsage` (what `show`, the reports and `compare` do).

Run: `.venv/bin/python bench/cost.py [--runs 300]`. Prints medians per run, the accounting's own
overhead (paired against the recorder of the same round) and the ratios to the raw agent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.scripted import ScriptedChatModel, call, say
from agents.testing_graphs import lookup, react_agent
from tracegrade.capture.recorder import Recorder
from tracegrade.capture.telemetry import RunTelemetry
from tracegrade.cost.pricing import PriceTable
from tracegrade.cost.usage import QuestionUsage
from tracegrade.execution.question.runner import account

TOOL_CALLS = 3
INPUTS = {"messages": [("user", "find three things")]}


def build_graph():
    turns = [call(("lookup", {"q": f"thing {i}"})) for i in range(TOOL_CALLS)] + [say("done")]
    model = ScriptedChatModel(script=turns, usage="measured", model_name="gpt-4o-mini")
    return react_agent(model, [lookup], name="bench")


def timed(fn) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6  # ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()

    graph = build_graph()
    tmp = tempfile.TemporaryDirectory()
    tel = RunTelemetry(trace_file=Path(tmp.name) / "bench.jsonl")
    prices = PriceTable.build()
    counter = iter(range(10**9))

    def raw():
        graph.invoke(INPUTS)

    def recorded(accounting: bool):
        started = time.perf_counter()
        rec = Recorder(
            tracer=tel.tracer,
            question_id=f"q{next(counter)}",
            dataset="bench",
            target="bench",
            agent_name="bench",
        )
        with rec.question_span():
            state = graph.invoke(INPUTS, {"callbacks": [rec]})
        record = rec.seal(state)
        assert len(record) == TOOL_CALLS and len(rec.model_calls) == TOOL_CALLS + 1
        if accounting:
            stored = account(prices, rec.model_calls, record, time.perf_counter() - started)
            usage = QuestionUsage.model_validate(stored)
            assert usage.cost is not None and usage.cost > 0 and usage.agent.calls == 4

    modes = {
        "raw agent": raw,
        "recorder": lambda: recorded(False),
        "recorder + accounting": lambda: recorded(True),
    }
    samples: dict[str, list[float]] = {name: [] for name in modes}
    for fn in modes.values():
        for _ in range(args.warmup):
            fn()
    for _ in range(args.runs):
        for name, fn in modes.items():
            samples[name].append(timed(fn))
    tel.shutdown()

    def paired(a: str, b: str) -> float:
        return statistics.median(x - y for x, y in zip(samples[a], samples[b], strict=True))

    medians = {name: statistics.median(values) for name, values in samples.items()}
    raw_ms = medians["raw agent"]
    print(f"scripted agent, {TOOL_CALLS} tool calls + 4 model calls per run, {args.runs} runs/mode")
    print(f"{'mode':<24}{'median ms/run':>15}{'x raw agent':>13}")
    for name, median in medians.items():
        print(f"{name:<24}{median:>15.3f}{median / raw_ms:>13.2f}")
    accounting = paired("recorder + accounting", "recorder")
    print(
        f"accounting's own overhead (paired against the recorder): {accounting * 1000:.0f} us per "
        f"question, {accounting / raw_ms:.1%} of the raw agent's run"
    )
    print(
        f"ratio recorder + accounting / raw agent: {medians['recorder + accounting'] / raw_ms:.2f}x "
        f"(recorder alone {medians['recorder'] / raw_ms:.2f}x)"
    )


if __name__ == "__main__":
    main()
