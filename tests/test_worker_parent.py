"""Workers of `run --workers 2` are tied to the run's process from their first instruction: a
kill -9 of the run during the workers' start-up (a slow agent import) ends them at once, not
when their start-up finishes and they first read their pipe (9-14 s with a real agent, as long
as the import takes here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runs_support import write_project

ROOT = Path(__file__).resolve().parents[1]

SLOW_IN_WORKERS = """
import multiprocessing, time

if multiprocessing.parent_process() is not None:  # a worker: its start-up takes a minute
    time.sleep(60)
"""


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_run_during_worker_start_up_ends_the_workers_at_once(tmp_path):
    config = write_project(tmp_path, questions=["paris", "rome"])
    agent = tmp_path / "agent.py"
    agent.write_text(SLOW_IN_WORKERS + agent.read_text())
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", "run", "--config", str(config), "--workers", "2"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    family: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the fork server and its two workers
            family = _descendants(proc.pid)
            if len(family) >= 4:  # the resource tracker, the fork server, two workers
                break
            time.sleep(0.1)
        assert len(family) >= 4, family
        time.sleep(1.0)  # the workers are inside their slow start-up
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15  # generous; a minute without the tie
        while any(_alive(p) for p in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in family), [p for p in family if _alive(p)]
    finally:
        for pid in family | {proc.pid}:  # only what this test started
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
