"""Figures for the fault corpus's oversized and formerly hanging inputs: each runs as the real
`tracegrade run` in a child process, and the time to exit and the child's peak memory are
printed beside the exit code.

- five answers of 10 MB each (every report written: JSON, Markdown, HTML, JUnit);
- tool arguments nested 260 levels deep (every report written);
- a trajectory regex `(a+)+b` against a 64-character argument (on a backtracking engine: hours);
- a full disk mid-run (a file size limit of 200 kB): time to a named exit 3.

Run: `.venv/bin/python bench/fault_figures.py`.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.runs_support import QUESTIONS, write_project  # noqa: E402

AGENT_EXTRA = """

def _nest(depth):
    value = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


SCRIPT["huge answer"] = [say("sunny\\n" + "a plain line of text, nothing in it\\n" * 280_000)]
SCRIPT["deep args"] = [call(("lookup", {"city": "Paris", "extra": _nest(260)})), say("sunny")]
SCRIPT["long city"] = [call(("lookup", {"city": "a" * 64 + "c"})), say("It is sunny.")]
"""
REPORTS = ["--json", "r.json", "--markdown", "s.md", "--html", "p.html", "--junit", "j.xml"]


def _case(root: Path, questions: list[dict], graders: list, extra: dict | None = None) -> None:
    target = {"graders": graders, "timeout_s": 300, "concurrency": 1, **(extra or {})}
    write_project(root, questions=[], extra_questions=questions, target=target)
    with (root / "agent.py").open("a", encoding="utf-8") as agent:
        agent.write(AGENT_EXTRA)


def _measure(root: Path, argv: list[str], fsize: int | None = None) -> tuple[int, float, float]:
    def limit() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])),
    }
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", *argv],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=limit,
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    return os.waitstatus_to_exitcode(status), elapsed, usage.ru_maxrss / 1024


def main() -> None:
    contains = [{"id": "contains", "match_on": ["expected", "keyword"]}]
    cases = {
        "5 answers of 10 MB": (
            [
                {"id": f"h{i}", "input": "huge answer", "expected": {"keyword": "sunny"}}
                for i in range(5)
            ],
            contains,
            REPORTS,
            None,
        ),
        "arguments 260 levels deep": (
            [{"id": "deep", "input": "deep args", "expected": {"keyword": "sunny"}}],
            contains,
            REPORTS,
            None,
        ),
        "(a+)+b against 64 a's": (
            [
                {
                    "id": "long",
                    "input": "long city",
                    "trajectory": {
                        "calls": [{"tool": "lookup", "args": {"city": {"regex": "(a+)+b"}}}]
                    },
                }
            ],
            [{"id": "trajectory_grader", "must_pass": True}],
            [],
            None,
        ),
        "disk full mid-run (30 questions)": (
            [dict(QUESTIONS["paris"], id=f"p{i:02d}") for i in range(30)],
            ["tool_usage_grader"],
            [],
            200_000,
        ),
    }
    print(f"{'case':36} {'exit':>4} {'time to exit':>13} {'peak memory':>12}")
    for name, (questions, graders, reports, fsize) in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _case(root, questions, graders)
            code, elapsed, peak_mb = _measure(root, ["run", "--quiet", *reports], fsize)
        print(f"{name:36} {code:>4} {elapsed:>12.1f}s {peak_mb:>10.0f} MB")


if __name__ == "__main__":
    main()
