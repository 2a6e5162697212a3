"""What capture costs, measured side by side in one process on the same scripted agent.

The agent: a LangGraph model/tools loop whose scripted model makes three tool calls in three
turns, then answers (4 model calls, 3 tool calls per run). Modes, interleaved round by round so
drift hits them alike:

- uninstrumented: `graph.invoke(inputs)`;
- empty handler: a `BaseCallbackHandler` with no methods (`run_inline=True`): the floor
  LangChain's callback dispatch costs before any handler does anything;
- recorder: tracegrade's `Recorder` with a `RunTelemetry` writing the local trace file (no
  OTLP), question span and `seal()` included;
- openinference: openinference-instrumentation-langchain with a batch processor, when
  importable (it patches LangChain globally, so it runs last and is uninstrumented after).

Run: `.venv/bin/python bench/capture.py [--runs 300]`. Prints medians per run and per tool call,
the overhead of each mode over uninstrumented, and the ratios the design targets:
recorder overhead <= 2x the empty-handler overhead, OpenInference >= 10x the recorder's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from agents.scripted import ScriptedChatModel, call, say
from agents.testing_graphs import lookup, react_agent
from tracegrade.capture.recorder import Recorder
from tracegrade.capture.telemetry import RunTelemetry

TOOL_CALLS = 3
INPUTS = {"messages": [("user", "find three things")]}


class EmptyHandler(BaseCallbackHandler):
    run_inline = True


def build_graph():
    turns = [call(("lookup", {"q": f"thing {i}"})) for i in range(TOOL_CALLS)] + [say("done")]
    return react_agent(ScriptedChatModel(script=turns), [lookup], name="bench")


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

    def uninstrumented():
        graph.invoke(INPUTS)

    def empty():
        graph.invoke(INPUTS, {"callbacks": [EmptyHandler()]})

    counter = iter(range(10**9))

    def recorder():
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
        assert len(record) == TOOL_CALLS and record.complete

    modes = {"uninstrumented": uninstrumented, "empty handler": empty, "recorder": recorder}
    samples: dict[str, list[float]] = {name: [] for name in modes}
    for fn in modes.values():
        for _ in range(args.warmup):
            fn()
    for _ in range(args.runs):
        for name, fn in modes.items():
            samples[name].append(timed(fn))
    report = tel.shutdown()
    # Overhead = median of paired differences against the uninstrumented run of the same
    # round: drift and neighbours' load hit both halves of a pair alike.
    base_runs = samples["uninstrumented"]
    overhead = {
        name: statistics.median(v - b for v, b in zip(values, base_runs, strict=True))
        for name, values in samples.items()
    }

    try:
        from openinference.instrumentation.langchain import LangChainInstrumentor
    except ImportError:
        LangChainInstrumentor = None
    if LangChainInstrumentor is not None:
        # Its patch is global, so it cannot share a round with the other modes: alternate
        # instrumented and plain blocks instead, and pair each run with its plain twin.
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
        instrumentor = LangChainInstrumentor()
        block = 25
        oi_runs: list[float] = []
        oi_base: list[float] = []
        for block_index in range(-1, args.runs // block):
            instrumentor.instrument(tracer_provider=provider)
            try:
                timings = [timed(uninstrumented) for _ in range(block)]
            finally:
                instrumentor.uninstrument()
            plain = [timed(uninstrumented) for _ in range(block)]
            if block_index >= 0:  # the first block is warm-up
                oi_runs += timings
                oi_base += plain
        provider.shutdown()
        samples["openinference"] = oi_runs
        overhead["openinference"] = statistics.median(
            v - b for v, b in zip(oi_runs, oi_base, strict=True)
        )

    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"scripted agent, {TOOL_CALLS} tool calls + 4 model calls per run, {args.runs} runs/mode")
    print(
        f"{'mode':<16}{'median ms/run':>15}{'ms/tool call':>14}"
        f"{'overhead ms/run':>17}{'overhead us/call':>18}"
    )
    for name, median in medians.items():
        over = overhead[name]
        print(
            f"{name:<16}{median:>15.3f}{median / TOOL_CALLS:>14.3f}"
            f"{over:>17.3f}{over / TOOL_CALLS * 1000:>18.0f}"
        )
    floor = overhead["empty handler"]
    ours = overhead["recorder"]
    print()
    print(f"recorder overhead / empty-handler overhead: {ours / floor:.2f}x (target <= 2x)")
    if "openinference" in overhead:
        theirs = overhead["openinference"]
        print(f"openinference overhead / recorder overhead: {theirs / ours:.1f}x (target >= 10x)")
    else:
        print("openinference-instrumentation-langchain not installed: not measured")
    print(f"trace file: {report.written} spans written, {report.failed} failed")
    tmp.cleanup()


if __name__ == "__main__":
    main()
