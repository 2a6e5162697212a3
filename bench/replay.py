"""What replaying the agent's model calls costs, and what it saves, side by side in one process.

1. Per model call: the scripted model (no latency) invoked directly, and the same calls answered
   from a cassette (`tracegrade.capture.replay`, mode `none`), interleaved call by call so this
   shared machine's drift hits both alike. Prints the medians and replay's added time per call
   (the target: <= 0.2 ms).
2. A whole run: `tracegrade run` on the support desk agent with a model answering in `--latency`
   seconds (default 50 ms), first live recording every call (`--record-mode all`), then replayed
   (`none`, the median of `--rounds` runs) with the same questions, concurrency `--concurrency` (default 1: the model's time is
   the run's time), then the floor: the same run with a model that answers instantly and no
   cassettes (the harness's own time per question: capture, graders, environment, commit).
   Prints the walls, the speed-up (the issue's target: >= 20x at 1,000 questions) and the
   replayed run over the floor (what replay itself adds to a run). A replayed run cannot beat
   the floor, so the speed-up is bounded by (model time + floor) / floor per question.

    .venv/bin/python bench/replay.py                      # 1,000 questions, 50 ms per call
    .venv/bin/python bench/replay.py --questions 100      # quick
    .venv/bin/python bench/replay.py --parts call         # one part
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402

from agents.scripted import ScriptedChatModel, say  # noqa: E402
from tracegrade.capture.replay import ReplaySession  # noqa: E402


def conversation() -> list:
    """A support-desk sized conversation: a policy prompt, a question, two tool turns."""
    policy = "You are the support desk. Follow the support policy exactly. " * 20
    return [
        SystemMessage(policy),
        HumanMessage("I want a refund for order A1042, it arrived broken."),
        AIMessage("", tool_calls=[{"name": "lookup_order", "args": {"id": "A1042"}, "id": "c1"}]),
        ToolMessage('{"id": "A1042", "status": "delivered", "total": 42.5}', tool_call_id="c1"),
        AIMessage("", tool_calls=[{"name": "refund", "args": {"id": "A1042"}, "id": "c2"}]),
        ToolMessage('{"refunded": 42.5}', tool_call_id="c2"),
    ]


def per_call(args: argparse.Namespace, root: Path) -> None:
    model = ScriptedChatModel(model_name="scripted", script=[say("Refunded.")] * 8)
    prompts = [conversation()[: 2 + 2 * k] for k in range(3)]
    recording = ReplaySession(root / "call.jsonl", "all", question_id="bench")
    with recording.active():
        for prompt in prompts:
            model.invoke(prompt)
    recording.finish()
    direct, replayed = [], []
    for _ in range(args.calls):
        for prompt in prompts:
            started = time.perf_counter()
            model.invoke(prompt)
            direct.append(time.perf_counter() - started)
        session = ReplaySession(root / "call.jsonl", "none", question_id="bench")
        with session.active():
            for prompt in prompts:
                started = time.perf_counter()
                model.invoke(prompt)
                replayed.append(time.perf_counter() - started)
    d, r = statistics.median(direct), statistics.median(replayed)
    print(f"per model call ({len(direct)} each, interleaved):")
    print(f"  scripted model, direct:   {d * 1e3:7.3f} ms")
    print(f"  answered from a cassette: {r * 1e3:7.3f} ms")
    print(f"  replay adds:              {(r - d) * 1e3:7.3f} ms per call (target <= 0.2 ms)")


def whole_run(args: argparse.Namespace, root: Path) -> None:
    from bench.run import write_project  # the support desk project bench/run.py measures
    from tracegrade.execution.run.lifecycle import start_run
    from tracegrade.inputs.config import load_config, with_cassettes
    from tracegrade.rundir.outcome import Selection

    os.environ["TRACEGRADE_DEMO_LATENCY"] = str(args.latency)
    path = write_project(root, args.questions, args.concurrency)
    cassettes = root / "cassettes"

    def timed(mode: str | None) -> float:
        config = load_config(path)
        if mode is not None:
            config = with_cassettes(config, directory=cassettes, mode=mode)
        started = time.perf_counter()
        outcome = start_run(config, Selection())
        wall = time.perf_counter() - started
        errored = sum(t.verdict.errored for t in outcome.targets)
        if errored:
            raise SystemExit(f"the {mode} run errored on {errored} question(s)")
        return wall

    live = timed("all")
    os.environ["TRACEGRADE_DEMO_LATENCY"] = "0"
    replays, floors = [], []
    for _ in range(args.rounds):  # interleaved: the machine's drift hits both alike
        replays.append(timed("none"))
        floors.append(timed(None))
    replayed, floor = statistics.median(replays), statistics.median(floors)
    print(
        f"{args.questions} questions, {args.latency * 1e3:g} ms per model call, "
        f"concurrency {args.concurrency}:"
    )
    print(f"  live, recording every call: {live:8.2f} s")
    print(f"  replayed from cassettes:    {replayed:8.2f} s")
    print(f"  floor: instant model, no cassettes: {floor:8.2f} s")
    print(f"  replayed is {live / replayed:.1f}x faster than live (target >= 20x)")
    print(f"  replayed / floor: {replayed / floor:.2f} (replay's own share of a run)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2000, help="rounds of the per-call part")
    parser.add_argument("--rounds", type=int, default=3, help="replayed/floor runs, interleaved")
    parser.add_argument("--parts", nargs="+", default=["call", "run"], choices=["call", "run"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if "call" in args.parts:
            per_call(args, Path(tmp))
        if "run" in args.parts:
            whole_run(args, Path(tmp))


if __name__ == "__main__":
    main()
