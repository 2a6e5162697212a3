"""Figures for the fault campaign's hangs and oversized judge answers (issue 28).

    .venv/bin/python bench/faults.py [--hangs] [--responses] [--size-mb 1000]

--hangs: each former hang of tests/test_fault_corpus_resources.py run as the real command;
prints its time to exit and exit code (each used to run until killed).
--responses: each oversized judge response read by tracegrade's client in a child process,
beside the plain read the client used to do (httpx `post`, body decoded whole), also in a
child process; prints each one's peak resident memory and what it ended with.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path; the repo root must be there.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from tests.test_fault_corpus_resources import HANG_CASES, hang_project, run_cli  # noqa: E402

CHILD = """
import asyncio, json, resource, sys, time
sys.path[:0] = [{root!r}, {src!r}]
from tests.openai_server import OpenAIServer, gzip_bomb, huge
from tracegrade.judging.provider import JudgeRequest

kind, size, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
server = OpenAIServer().start()
server.default = huge(size) if kind == "huge" else (
    huge(size, declared=False) if kind == "undeclared" else gzip_bomb(size))
request = JudgeRequest(messages=({{"role": "user", "content": "grade"}},))
started = time.monotonic()
try:
    if mode == "tracegrade":
        from tracegrade.judging import build_provider
        provider = build_provider({{"base_url": server.base_url, "model": "m", "max_attempts": 1}})
        asyncio.run(provider.acomplete(request))
        outcome = "answer read"
    else:  # the plain read tracegrade's client used to do
        import httpx
        body = httpx.post(server.base_url + "/chat/completions", json={{"model": "m"}},
                          timeout=300).json()
        outcome = f"answer read ({{len(body['choices'][0]['message']['content']):,}} chars)"
except Exception as exc:
    outcome = f"{{type(exc).__name__}}: {{str(exc)[-80:]}}"
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"peak_mb": peak, "seconds": time.monotonic() - started, "outcome": outcome}}))
server.stop()
"""


def hangs() -> None:
    print(f"{'former hang':42} {'exit':>4} {'time to exit':>13}")
    for case in HANG_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            config = hang_project(Path(tmp), case.questions, **case.target)
            try:
                code, _, elapsed, _ = run_cli(config, *case.args, limit_s=600)
                print(f"{case.name:42} {code:>4} {elapsed:>12.1f}s")
            except subprocess.TimeoutExpired:
                print(f"{case.name:42} {'-':>4} {'> 600s':>13}")


def responses(size_mb: int) -> None:
    script = CHILD.format(root=str(ROOT), src=str(ROOT / "src"))
    size = size_mb * 1_000_000
    print(f"{'response':32} {'client':11} {'peak RSS':>9} {'seconds':>8}  outcome")
    for kind in ("huge", "undeclared", "gzip"):
        label = {
            "huge": f"{size_mb} MB body",
            "undeclared": f"{size_mb} MB body, no length",
            "gzip": f"gzip inflating to {size_mb} MB",
        }[kind]
        for mode in ("plain", "tracegrade"):
            done = subprocess.run(
                [sys.executable, "-c", script, kind, str(size), mode],
                capture_output=True,
                text=True,
                timeout=900,
            )
            try:
                row = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                print(f"{label:32} {mode:11} failed: {done.stderr[-200:]}")
                continue
            print(
                f"{label:32} {mode:11} {row['peak_mb']:>7.0f}MB {row['seconds']:>8.1f}  "
                f"{row['outcome']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hangs", action="store_true")
    parser.add_argument("--responses", action="store_true")
    parser.add_argument("--size-mb", type=int, default=1000)
    args = parser.parse_args()
    started = time.monotonic()
    if args.responses or not args.hangs:
        responses(args.size_mb)
    if args.hangs or not args.responses:
        hangs()
    print(f"(bench took {time.monotonic() - started:.0f}s)")


if __name__ == "__main__":
    main()
