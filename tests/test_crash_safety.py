"""Crash and signal safety through the real CLI in a subprocess: kill -9 then `--resume` then
`grade` is clean; SIGTERM and SIGHUP end a run like Ctrl-C (resume hint, 143 / 129)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runs_support import write_project

ROOT = Path(__file__).resolve().parents[1]


def _questions(n: int) -> list[dict]:
    return [
        {
            "id": f"q{i:03d}",
            "input": "weather in Paris?",
            "expected": {"keyword": "sunny"},
            "expected_tools": [{"tool": "lookup", "should_run": True}],
        }
        for i in range(n)
    ]


def _cli(*args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tracegrade", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rows(run_dir: Path) -> int:
    db = run_dir / "results.sqlite"
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM questions").fetchone()[0]
    except sqlite3.Error:
        return 0


def _start_and_wait(tmp_path: Path, config: Path, *, rows: int) -> tuple[subprocess.Popen, Path]:
    proc = _cli("run", "--config", str(config), "--quiet", cwd=tmp_path)
    runs = tmp_path / "runs"
    deadline = time.monotonic() + 120  # generous: the machine may be loaded
    while time.monotonic() < deadline:
        dirs = list(runs.iterdir()) if runs.is_dir() else []
        if dirs and _rows(dirs[0]) >= rows:
            return proc, dirs[0]
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never committed enough rows")


def _project(tmp_path: Path, n: int = 40, latency_s: float = 0.05) -> Path:
    return write_project(
        tmp_path,
        questions=[],
        extra_questions=_questions(n),
        latency_s=latency_s,
        target={"concurrency": 4, "timeout_s": 30},
    )


def test_kill_9_then_resume_then_grade_is_clean(tmp_path):
    config = _project(tmp_path)
    proc, run_dir = _start_and_wait(tmp_path, config, rows=8)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    resume = _cli("run", "--config", str(config), "--resume", run_dir.name, "--quiet", cwd=tmp_path)
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, out + err
    grade = _cli("grade", run_dir.name, "--config", str(config), "--quiet", cwd=tmp_path)
    out, err = grade.communicate(timeout=300)
    assert grade.returncode == 0, out + err
    assert "errored 0, degraded 0 of 40" in out


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c(tmp_path, sig, code):
    config = _project(tmp_path)
    proc, run_dir = _start_and_wait(tmp_path, config, rows=4)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert f"tracegrade run --resume {run_dir.name}" in err
    # every committed row's record reached the trace file before the process ended
    resume = _cli("run", "--config", str(config), "--resume", run_dir.name, "--quiet", cwd=tmp_path)
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, out + err
    grade = _cli("grade", run_dir.name, "--config", str(config), "--quiet", cwd=tmp_path)
    out, err = grade.communicate(timeout=300)
    assert grade.returncode == 0 and "degraded 0 of 40" in out, out + err


# The signal lands inside asyncio's own code: in the `call_soon` that makes the handle waking the
# run's task once its sleep is over (a trace hook raises it there, as an unlucky signal does).
LOST_WAKEUP = """
import asyncio, signal, sys

from tracegrade import cli
from tracegrade.execution.executors.loops import run_without_loop

SIG = getattr(signal, sys.argv[1])
armed = [False]


def tracer(frame, event, arg):
    if armed[0] and event == "call" and frame.f_code is asyncio.events.Handle.__init__.__code__:
        if "wakeup" in repr(frame.f_locals.get("callback")).lower():
            armed[0] = False
            signal.raise_signal(SIG)


async def main():
    armed[0] = True
    await asyncio.sleep(0.05)
    return "finished"


sys.settrace(tracer)
try:
    with cli.handle_stop_signals():
        print(run_without_loop("t", main))
except KeyboardInterrupt as exc:
    print(type(exc).__name__, getattr(exc, "signum", None))
"""


@pytest.mark.parametrize(
    ("sig", "printed"),
    [("SIGTERM", "Interrupted 15"), ("SIGHUP", "Interrupted 1"), ("SIGINT", "KeyboardInterrupt")],
)
def test_a_stop_signal_inside_the_event_loop_never_hangs_the_ending(tmp_path, sig, printed):
    # Raised where it landed, the interruption lost the task's wakeup: the task never ran again,
    # not even to be cancelled, and the loop's cleanup waited for it for ever (one whole-suite
    # run beside `stress --cpu 6` hung the SIGHUP case below past its 60 s bound this way).
    script = tmp_path / "lost_wakeup.py"
    script.write_text(LOST_WAKEUP, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script), sig], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = proc.communicate(timeout=60)  # ~0.1 s when it ends at all
    finally:
        proc.kill()
    assert out.decode().split("\n")[0].startswith(printed), (out + err).decode()


STUCK = """
import threading

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda


def _answer(state):
    if state["messages"][-1]["content"] == "hang":
        threading.Event().wait()  # a sync call that never returns
    return {"messages": [AIMessage("sunny")]}


def build_graph():
    return RunnableLambda(_answer, name="stuck")
"""


def test_a_stuck_sync_call_never_blocks_the_exit(tmp_path):
    rows = [
        {"id": "hang", "input": "hang", "expected": {"keyword": "sunny"}},
        {"id": "ok", "input": "fine", "expected": {"keyword": "sunny"}},
    ]
    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=rows,
        target={
            "agent": "stuck.py:build_graph",
            "timeout_s": 1,
            "graders": [{"id": "contains", "match_on": ["expected", "keyword"]}],
        },
    )
    (tmp_path / "stuck.py").write_text(STUCK, encoding="utf-8")
    report = tmp_path / "r.json"
    started = time.monotonic()
    proc = _cli("run", "--config", str(config), "--quiet", "--json", str(report), cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    # timeout_s plus a few seconds (generous slack for a loaded machine), never "for ever"
    assert time.monotonic() - started < 90
    assert proc.returncode == 3, out + err
    assert report.is_file() and "timed out after 1s" in report.read_text()


def test_one_damaged_trace_file_line_degrades_only_its_question(tmp_path):
    from tracegrade import load_config, regrade_run, start_run

    config = load_config(
        write_project(
            tmp_path, questions=[], extra_questions=_questions(4), target={"concurrency": 1}
        )
    )
    outcome = start_run(config)
    assert outcome.exit_code == 0
    trace_file = outcome.run_dir / "traces" / "t.jsonl"
    lines = trace_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 4  # each question's record reached the file before its row
    lines[1] = lines[1][: len(lines[1]) // 2]  # half a line, as a killed write leaves it
    trace_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    again = regrade_run(config, outcome.run_id)
    questions = again.targets[0].questions
    hit = [q for q in questions if q.degraded]
    assert len(hit) == 1 and "record" in (hit[0].error or hit[0].graders[0].reason)
    assert all(q.composite == 5.0 for q in questions if not q.degraded)
    assert any("t.jsonl:2: not an OTLP JSON line" in n for n in again.notes)


def test_a_second_resume_of_a_live_run_is_refused_and_a_dead_holder_never_blocks(tmp_path, capsys):
    from tracegrade.cli import main

    config = _project(tmp_path, n=200)
    proc, run_dir = _start_and_wait(tmp_path, config, rows=2)
    try:
        code = main(["run", "--config", str(config), "--resume", run_dir.name, "--quiet"])
        err = capsys.readouterr().err
        assert code == 4, err
        assert f"in use by pid {proc.pid}" in err
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    # the holder died by kill -9: its lock went with it
    assert main(["run", "--config", str(config), "--resume", run_dir.name, "--quiet"]) == 0


def test_grade_of_an_interrupted_run_is_incomplete_and_says_how_to_resume(tmp_path, capsys):
    from tracegrade.cli import main

    config = _project(tmp_path, n=40)
    proc, run_dir = _start_and_wait(tmp_path, config, rows=3)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    rows = _rows(run_dir)
    assert rows < 40
    assert main(["grade", run_dir.name, "--config", str(config), "--quiet"]) == 3
    out = capsys.readouterr().out
    assert f"{40 - rows} of 40 selected question(s) have no result" in out
    assert f"tracegrade run --resume {run_dir.name}" in out


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("results.sqlite", lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 3])),
        ("results.sqlite", lambda p: p.write_bytes(b"garbage, not a database" * 100)),
        ("identity.json", lambda p: p.write_text('{"run_id": "x", "targ')),
        ("identity.json", lambda p: p.write_text("[1, 2]")),
    ],
)
@pytest.mark.parametrize("command", ["resume", "grade"])
def test_a_damaged_run_file_is_exit_4_naming_it(tmp_path, capsys, name, damage, command):
    from tracegrade.cli import main

    config = write_project(tmp_path, questions=[], extra_questions=_questions(30))
    assert main(["run", "--config", str(config), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    for extra in ("results.sqlite-wal", "results.sqlite-shm"):
        (run_dir / extra).unlink(missing_ok=True)
    damage(run_dir / name)
    capsys.readouterr()
    argv = (
        ["run", "--config", str(config), "--resume", run_dir.name]
        if command == "resume"
        else ["grade", run_dir.name, "--config", str(config)]
    )
    assert main([*argv, "--quiet"]) == 4
    err = capsys.readouterr().err
    assert str(run_dir / name) in err and "Traceback" not in err
